/*-------------------------------------------------------------------------
 *
 * src/delivery/send_barrier.h
 *	  The kill switch and type pauses as a barrier: once a switch-off or a
 *	  pause has committed, no request's first byte goes on the wire.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SEND_BARRIER_H
#define IDEMGATE_SEND_BARRIER_H

#include "postgres.h"
#include "port/atomics.h"

#include "core/idemgate_limits.h"

/* The barrier's shared state: a segment of its own. */
typedef struct SendBarrierShared
{
	/* Transactions past PRE_COMMIT that hold sends, not yet ended. */
	pg_atomic_uint32 setters;
	/* Bumped by every such transaction at PRE_COMMIT. */
	pg_atomic_uint64 generation;
	/* Per dispatcher slot: odd while inside curl_multi_perform. */
	pg_atomic_uint64 perform_seq[IDEMGATE_MAX_DISPATCHERS];
} SendBarrierShared;

/* From _PG_init: defines the segment (src/core/shmem_segment.c). */
extern void SendBarrierShmemDefine(void);

/* Any backend: hold every dispatcher's sends from this transaction's commit. */
extern void SendBarrierHoldAtCommit(void);

/* Dispatcher side. */
extern void SendBarrierBegin(int slot);
extern void SendBarrierPerformBegin(void);
extern void SendBarrierPerformEnd(void);
extern bool SendBarrierAllows(const char *effect_type);
extern bool SendBarrierStale(void);
extern void SendBarrierRefresh(void);

#endif
