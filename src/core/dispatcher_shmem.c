/*-------------------------------------------------------------------------
 *
 * src/core/dispatcher_shmem.c
 *	  The dispatchers' shared memory: their slots, and waking them.
 *
 * Design note. One slot per dispatcher with the dispatcher's pid and
 * PGPROC number (so anyone can set its latch) plus counters shown by
 * idemgate.dispatcher_status(), in a segment of its own
 * (src/core/shmem_segment.c). There is no lock: each slot is written only by
 * its dispatcher, and readers tolerate stale values (see
 * dispatcher_shmem.h). Waking them at commit is src/core/dispatcher_wake.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

#include "core/dispatcher_shmem.h"
#include "core/shmem_segment.h"

DispatcherShared *DispatcherShmem = NULL;

/* InitDispatcherShared sets up a new segment: every slot empty. */
static void
InitDispatcherShared(void *segment)
{
	DispatcherShared *d = segment;

	/* Any value unlike the last life's will do; no CSPRNG needed. */
	d->life_id = (uint32) (GetCurrentTimestamp() ^ ((uint64) MyProcPid << 16) ^ random());
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		DispatcherSlot *s = &d->slots[i];

		s->pid = 0;
		s->procno = -1;
		pg_atomic_init_u64(&s->claimed, 0);
		pg_atomic_init_u64(&s->completed, 0);
		pg_atomic_init_u64(&s->failed, 0);
		pg_atomic_init_u64(&s->released, 0);
		pg_atomic_init_u64(&s->rounds, 0);
		pg_atomic_init_u32(&s->in_flight, 0);
		pg_atomic_init_u64(&s->last_round_at, 0);
		pg_atomic_init_u64(&s->started_at, 0);
		pg_atomic_init_u32(&s->incarnation, 0);
	}
}

/* DispatcherShmemDefine defines the segment; from _PG_init. */
void
DispatcherShmemDefine(void)
{
	DefineShmemSegment("idemgate dispatchers", sizeof(DispatcherShared),
					   InitDispatcherShared, (void **) &DispatcherShmem);
}

/* WakeDispatchers sets every running dispatcher's latch. */
void
WakeDispatchers(void)
{
	if (DispatcherShmem == NULL)
		return;
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		int			procno = DispatcherShmem->slots[i].procno;

		if (procno >= 0 && procno < (int) ProcGlobal->allProcCount)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	}
}

/* SlotTakenByLiveProcess tells whether a live dispatcher holds slot. */
bool
SlotTakenByLiveProcess(int slot)
{
	int			pid = DispatcherShmem ? DispatcherShmem->slots[slot].pid : 0;

	return pid != 0 && pid != MyProcPid && kill(pid, 0) == 0;
}

/* DispatcherSlotInUse tells whether a dispatcher has taken slot. */
bool
DispatcherSlotInUse(int slot)
{
	return DispatcherShmem != NULL && DispatcherShmem->slots[slot].pid != 0;
}
