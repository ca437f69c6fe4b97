/*-------------------------------------------------------------------------
 *
 * src/dispatcher_shmem.h
 *	  Shared memory of the dispatchers, and waking them when new effects
 *	  become due.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCHER_SHMEM_H
#define IDEMGATE_DISPATCHER_SHMEM_H

#include "postgres.h"
#include "port/atomics.h"

#include "idemgate_limits.h"
#include "rate_limit.h"
#include "send_barrier.h"

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

typedef struct IdemgateShared
{
	volatile int launcher_pid;
	uint32		life_id;		/* random, new at every shared memory setup
								 * (server start and crash restart); see
								 * src/dispatcher_leases.c */
	DispatcherSlot slots[IDEMGATE_MAX_DISPATCHERS];
	SendBarrierShared barrier;	/* src/send_barrier.c */
	RateLimitShared rates;		/* src/rate_limit.c */
} IdemgateShared;

/* NULL unless the library was preloaded. */
extern IdemgateShared *IdemgateShmem;

extern void IdemgateShmemInit(void);

/*
 * WakeDispatcherAtCommit asks for the dispatchers to be woken when the
 * current transaction commits (nothing happens on abort, or when the
 * library is not preloaded). Cheap to call many times per transaction.
 */
extern void WakeDispatcherAtCommit(void);

/* WakeDispatchers sets every dispatcher's latch now. */
extern void WakeDispatchers(void);
extern bool SlotTakenByLiveProcess(int slot);

#endif
