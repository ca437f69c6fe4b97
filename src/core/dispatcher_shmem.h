/*-------------------------------------------------------------------------
 *
 * src/core/dispatcher_shmem.h
 *	  The dispatchers' shared memory: one slot per dispatcher, read by
 *	  dispatcher_status(), the send barrier and the wake-up.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCHER_SHMEM_H
#define IDEMGATE_DISPATCHER_SHMEM_H

#include "postgres.h"
#include "port/atomics.h"

#include "core/idemgate_limits.h"

/*
 * One dispatcher's slot. pid and procno are written only by the dispatcher
 * that owns the slot (0 / -1 when empty) and read without a lock: a reader
 * that sees a stale procno at worst sets the latch of another process,
 * which every latch user tolerates as a spurious wake-up. The counters are
 * atomics written by the owner only.
 */
typedef struct DispatcherSlot
{
	volatile int pid;
	volatile int procno;
	pg_atomic_uint64 claimed;
	pg_atomic_uint64 completed;
	pg_atomic_uint64 failed;
	pg_atomic_uint64 released;
	pg_atomic_uint64 rounds;
	pg_atomic_uint32 in_flight;
	pg_atomic_uint64 last_round_at;	/* TimestampTz */
	pg_atomic_uint64 started_at;	/* TimestampTz */
	pg_atomic_uint32 incarnation;	/* starts of this slot in this life */
} DispatcherSlot;

typedef struct DispatcherShared
{
	uint32		life_id;		/* random, new at every shared memory setup
								 * (server start and crash restart); see
								 * src/delivery/dispatcher_leases.c */
	DispatcherSlot slots[IDEMGATE_MAX_DISPATCHERS];
} DispatcherShared;

/* NULL unless the library was preloaded. */
extern DispatcherShared *DispatcherShmem;

/* From _PG_init: defines the segment (src/core/shmem_segment.c). */
extern void DispatcherShmemDefine(void);

/* WakeDispatchers sets every dispatcher's latch now. */
extern void WakeDispatchers(void);
extern bool SlotTakenByLiveProcess(int slot);
/* DispatcherSlotInUse tells whether a dispatcher has taken slot. */
extern bool DispatcherSlotInUse(int slot);

#endif
