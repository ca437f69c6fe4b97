/*-------------------------------------------------------------------------
 *
 * src/dispatcher_shmem.c
 *	  The dispatchers' shared memory, and waking them after commit.
 *
 * Design note. Shared memory holds one slot per dispatcher with the
 * dispatcher's pid and PGPROC number (so anyone can set its latch) plus
 * counters shown by idemgate.dispatcher_status(). It is requested with
 * shmem_request_hook + RequestAddinShmemSpace and set up in
 * shmem_startup_hook under AddinShmemInitLock, like pg_stat_statements.
 * There is no lock of our own: each slot is written only by its
 * dispatcher, and readers tolerate stale values (see dispatcher_shmem.h).
 *
 * Waking: a transaction that makes effects due calls WakeDispatcherAtCommit,
 * which registers a transaction callback once per backend and raises a
 * flag. On XACT_EVENT_COMMIT the callback sets every dispatcher's latch, so
 * the effects go out right after they become visible; on abort (or
 * PREPARE) the flag is simply dropped. Polling (idemgate.poll_interval)
 * remains only as the fallback for effects that become due by time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "dispatcher_shmem.h"

IdemgateShared *IdemgateShmem = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool xact_callback_registered = false;
static bool wake_at_commit = false;

/* IdemgateShmemRequest reserves our shared memory. */
static void
IdemgateShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(IdemgateShared)));
}

/* IdemgateShmemStartup creates or attaches to our shared memory. */
static void
IdemgateShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	IdemgateShmem = ShmemInitStruct("idemgate", sizeof(IdemgateShared), &found);
	if (!found)
	{
		IdemgateShmem->launcher_pid = 0;
		/* Any value unlike the last life's will do; no CSPRNG needed. */
		IdemgateShmem->life_id = (uint32) (GetCurrentTimestamp() ^ ((uint64) MyProcPid << 16) ^ random());
		for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
		{
			DispatcherSlot *s = &IdemgateShmem->slots[i];

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
		SendBarrierShmemInit(&IdemgateShmem->barrier);
		RateLimitShmemInit(&IdemgateShmem->rates);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* IdemgateShmemInit installs the hooks; called from _PG_init when preloaded. */
void
IdemgateShmemInit(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = IdemgateShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = IdemgateShmemStartup;
}

/* WakeDispatchers sets every running dispatcher's latch. */
void
WakeDispatchers(void)
{
	if (IdemgateShmem == NULL)
		return;
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		int			procno = IdemgateShmem->slots[i].procno;

		if (procno >= 0 && procno < (int) ProcGlobal->allProcCount)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	}
}

/* WakeAtCommitCallback wakes the dispatchers when a flagged transaction commits. */
static void
WakeAtCommitCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_at_commit)
			{
				wake_at_commit = false;
				WakeDispatchers();
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			wake_at_commit = false;
			break;
		default:
			break;
	}
}

/* WakeDispatcherAtCommit flags the current transaction (see dispatcher_shmem.h). */
void
WakeDispatcherAtCommit(void)
{
	if (IdemgateShmem == NULL)
		return;
	if (!xact_callback_registered)
	{
		RegisterXactCallback(WakeAtCommitCallback, NULL);
		xact_callback_registered = true;
	}
	wake_at_commit = true;
}

/* SlotTakenByLiveProcess tells whether a live dispatcher holds slot. */
bool
SlotTakenByLiveProcess(int slot)
{
	int			pid = IdemgateShmem ? IdemgateShmem->slots[slot].pid : 0;

	return pid != 0 && pid != MyProcPid && kill(pid, 0) == 0;
}
