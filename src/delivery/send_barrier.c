/*-------------------------------------------------------------------------
 *
 * src/delivery/send_barrier.c
 *	  The kill switch and type pauses as a barrier (docs/dispatcher.md, "The
 *	  kill switch and pauses as a barrier"): once set_actions_enabled(false,
 *	  ...) or pause_effect_type(...) has committed, no request's first byte
 *	  goes on the wire; requests already started may finish.
 *
 * Design note.
 *
 * Why a check before handing a request to libcurl is not enough: libcurl
 * writes a request only inside curl_multi_perform, possibly several
 * milliseconds (a connect, a busy round) after the dispatcher checked the
 * switch; a switch-off that commits in between would still see requests go
 * out. So the last check is made by libcurl itself: CURLOPT_PREREQFUNCTION
 * (src/delivery/http.c) is called after the connection is up and right before the
 * request is written, in the same curl_multi_perform call that writes its
 * first bytes, and SendBarrierAllows() decides there. A refused request is
 * aborted unsent (CURLE_ABORTED_BY_CALLBACK, HttpRequest.held) and the
 * dispatcher gives the effect back to pending with the attempt uncounted.
 *
 * SendBarrierAllows only reads shared memory and process-local state (it
 * runs inside a libcurl callback: no palloc, no SQL, no ERROR):
 *
 *   allowed = GUC idemgate.actions_enabled
 *             AND setters = 0                    (no switch-off committing)
 *             AND generation = absorbed          (none committed since the
 *                                                 dispatcher last read state)
 *             AND local_enabled                  (switch on at that read)
 *             AND effect type not in local_paused (at that read)
 *
 * The switching side. set_actions_enabled(false) and pause_effect_type
 * write idemgate.control / idemgate.paused_effect_types; AFTER ROW
 * triggers on those tables (idemgate--1.0--1.1.sql, part 45_dispatch) call
 * SendBarrierHoldAtCommit, so a direct UPDATE or a pg_dump restore is
 * covered too. At XACT_EVENT_PRE_COMMIT the transaction
 *   1. increments setters, then generation (full barriers);
 *   2. for every running dispatcher whose perform_seq is odd (inside
 *      curl_multi_perform), waits until it changes — that call may have
 *      passed its check before step 1;
 *   3. commits; at XACT_EVENT_COMMIT (after the commit is visible in the
 *      proc array) or XACT_EVENT_ABORT it decrements setters.
 * After step 2 every check in every later curl_multi_perform sees
 * setters > 0 (the dispatcher increments perform_seq with a full barrier
 * before calling curl_multi_perform, the setter increments setters with a
 * full barrier before reading perform_seq: one of them sees the other).
 * So no check that allowed a send spans the commit: a request is either
 * past its check before the commit, or checked after it and refused.
 *
 * The dispatcher clears the hold for itself only by reading the state that
 * was committed: SendBarrierRefresh reads generation, then setters; only
 * when setters = 0 (every setter counted in that generation has committed
 * or aborted, and its commit is visible) does a fresh snapshot taken after
 * that read give local_enabled / local_paused and absorbed = generation.
 * Switching on, resuming, or a rolled-back switch-off therefore costs a
 * short hold (one refresh, a few milliseconds) and nothing else; held
 * requests go back to pending and are claimed again.
 *
 * Not covered: the setting idemgate.actions_enabled is read at each check,
 * but a reload reaches the dispatcher at its next loop (a setting has no
 * commit to order against). A request whose first bytes libcurl could not
 * write in the call that checked it (socket send buffer full) is written
 * later; with one request per connection (HTTP/1.1, no pipelining) the
 * buffer is empty when a request starts.
 *
 * Prepared transactions (Citus writes a reference table on every node with
 * two-phase commit, docs/citus.md): the hold is raised at PRE_PREPARE
 * instead, and kept after PREPARE until this session's next transaction
 * ends, the COMMIT PREPARED (or ROLLBACK PREPARED) that Citus sends on the
 * same connection; from then on the dispatcher reads the committed state.
 * A prepared switch-off finished by another session (Citus's recovery
 * after a coordinator crash) is not covered: the hold ends with this
 * session, possibly before that commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/dispatcher_shmem.h"
#include "core/guc.h"
#include "policy/killswitch.h"
#include "delivery/send_barrier.h"
#include "core/shmem_segment.h"
#include "core/at_commit_flag.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_hold_sends_trigger);

/* Longest a switching transaction waits for one dispatcher's perform call. */
#define BARRIER_WAIT_MAX_MS 10000
/* Poll step of that wait; a perform call lasts microseconds to a few ms. */
#define BARRIER_WAIT_STEP_US 50

/* Setter side, per backend. */
static bool hold_at_commit = false;
static bool holding = false;
static int	prepared_holds = 0;		/* held by transactions this session prepared */
static bool callback_registered = false;

/* Dispatcher side, per process. */
static int	barrier_slot = -1;
static uint64 absorbed_generation = PG_UINT64_MAX;	/* none yet: hold */
static bool local_enabled = false;
static char **local_paused = NULL;	/* in TopMemoryContext */
static int	n_local_paused = 0;

static SavedStatement paused_types_stmt = {
	"SELECT effect_type FROM idemgate.paused_effect_types",
	0, {InvalidOid}
};

/* NULL unless the library was preloaded. */
static SendBarrierShared *Barrier = NULL;

/* InitSendBarrier sets up a new segment: no setter, nothing performing. */
static void
InitSendBarrier(void *segment)
{
	SendBarrierShared *b = segment;

	pg_atomic_init_u32(&b->setters, 0);
	pg_atomic_init_u64(&b->generation, 0);
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
		pg_atomic_init_u64(&b->perform_seq[i], 0);
}

/* SendBarrierShmemDefine defines the segment; from _PG_init. */
void
SendBarrierShmemDefine(void)
{
	DefineShmemSegment("idemgate send barrier", sizeof(SendBarrierShared),
					   InitSendBarrier, (void **) &Barrier);
}

/* ------------------------------------------------------ setter side */

/*
 * RaiseHold is steps 1 and 2 of the design note: count this transaction
 * as a setter, then wait for every dispatcher's perform call that may have
 * checked before.
 */
static void
RaiseHold(void)
{
	SendBarrierShared *b = Barrier;

	pg_atomic_fetch_add_u32(&b->setters, 1);
	holding = true;
	pg_atomic_fetch_add_u64(&b->generation, 1);

	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		uint64		seq;
		TimestampTz start;

		if (!DispatcherSlotInUse(i))
			continue;
		seq = pg_atomic_read_u64(&b->perform_seq[i]);
		if ((seq & 1) == 0)
			continue;
		start = GetCurrentTimestamp();
		while (pg_atomic_read_u64(&b->perform_seq[i]) == seq)
		{
			if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), BARRIER_WAIT_MAX_MS))
			{
				ereport(WARNING,
						(errmsg("idemgate: dispatcher %d did not leave a libcurl call within "
								"%d ms; a request it is starting may still go out",
								i, BARRIER_WAIT_MAX_MS)));
				break;
			}
			pg_usleep(BARRIER_WAIT_STEP_US);
		}
	}
}

static bool exit_registered = false;

/* ReleasePreparedHolds drops the holds of transactions this session prepared. */
static void
ReleasePreparedHolds(int code, Datum arg)
{
	if (prepared_holds > 0)
	{
		/* a new generation: dispatchers read the state again, now committed */
		pg_atomic_fetch_add_u64(&Barrier->generation, 1);
		pg_atomic_fetch_sub_u32(&Barrier->setters, prepared_holds);
		prepared_holds = 0;
	}
}

/* BarrierXactCallback raises the hold at PRE_COMMIT and drops it at the end. */
static void
BarrierXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (hold_at_commit)
			{
				hold_at_commit = false;
				RaiseHold();
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (hold_at_commit)
			{
				hold_at_commit = false;
				RaiseHold();
			}
			break;
		case XACT_EVENT_PREPARE:
			hold_at_commit = false;
			if (holding)
			{
				/* kept until the COMMIT PREPARED (see the design note) */
				holding = false;
				if (prepared_holds++ == 0 && !exit_registered)
				{
					on_proc_exit(ReleasePreparedHolds, (Datum) 0);
					exit_registered = true;
				}
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			hold_at_commit = false;
			if (holding)
			{
				holding = false;
				pg_atomic_fetch_sub_u32(&Barrier->setters, 1);
			}
			ReleasePreparedHolds(0, (Datum) 0);
			break;
		default:
			break;
	}
}

/*
 * SendBarrierHoldAtCommit makes the current transaction hold every
 * dispatcher's sends from its commit on (see the design note). Nothing
 * happens when the library is not preloaded (there is no dispatcher).
 */
void
SendBarrierHoldAtCommit(void)
{
	if (Barrier != NULL)
		FlagAtCommit(&hold_at_commit, &callback_registered, BarrierXactCallback);
}

/*
 * idemgate_hold_sends_trigger is the AFTER ROW trigger on idemgate.control
 * (when the switch goes off) and idemgate.paused_effect_types (a pause).
 */
Datum
idemgate_hold_sends_trigger(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "idemgate_hold_sends_trigger must be called as a trigger");
	SendBarrierHoldAtCommit();
	return PointerGetDatum(NULL);
}

/* -------------------------------------------------- dispatcher side */

/* LeavePerformOnExit keeps perform_seq even if we exit inside a perform call. */
static void
LeavePerformOnExit(int code, Datum arg)
{
	pg_atomic_uint64 *seq = &Barrier->perform_seq[barrier_slot];

	if (pg_atomic_read_u64(seq) & 1)
		pg_atomic_fetch_add_u64(seq, 1);
}

/* SendBarrierBegin tells the barrier which dispatcher slot this process is. */
void
SendBarrierBegin(int slot)
{
	barrier_slot = slot;
	if (pg_atomic_read_u64(&Barrier->perform_seq[slot]) & 1)
		pg_atomic_fetch_add_u64(&Barrier->perform_seq[slot], 1);
	on_shmem_exit(LeavePerformOnExit, (Datum) 0);
}

/* SendBarrierPerformBegin marks entry to curl_multi_perform (odd). */
void
SendBarrierPerformBegin(void)
{
	if (barrier_slot >= 0)
		pg_atomic_fetch_add_u64(&Barrier->perform_seq[barrier_slot], 1);
}

/* SendBarrierPerformEnd marks the return from curl_multi_perform (even). */
void
SendBarrierPerformEnd(void)
{
	if (barrier_slot >= 0)
		pg_atomic_fetch_add_u64(&Barrier->perform_seq[barrier_slot], 1);
}

/*
 * SendBarrierAllows is the check right before a request's first byte
 * (called from libcurl's pre-request callback). Never allocates or raises.
 */
bool
SendBarrierAllows(const char *effect_type)
{
	SendBarrierShared *b;

	if (!IdemgateActionsEnabled || Barrier == NULL)
		return false;
	b = Barrier;
	if (pg_atomic_read_u32(&b->setters) != 0)
		return false;
	if (pg_atomic_read_u64(&b->generation) != absorbed_generation)
		return false;
	if (!local_enabled)
		return false;
	if (effect_type != NULL)
		for (int i = 0; i < n_local_paused; i++)
			if (strcmp(local_paused[i], effect_type) == 0)
				return false;
	return true;
}

/*
 * SendBarrierStale tells whether a switch or pause committed since the
 * last SendBarrierRefresh (so a refresh would lift a hold).
 */
bool
SendBarrierStale(void)
{
	SendBarrierShared *b = Barrier;

	return pg_atomic_read_u32(&b->setters) == 0 &&
		pg_atomic_read_u64(&b->generation) != absorbed_generation;
}

/*
 * SendBarrierRefresh reads the committed switch and pauses into the local
 * state (see the design note for the order of reads). Must be called
 * inside a transaction with SPI connected; every statement takes a fresh
 * snapshot (read_only = false under READ COMMITTED).
 */
void
SendBarrierRefresh(void)
{
	SendBarrierShared *b = Barrier;
	uint64		generation;
	bool		quiet;
	bool		enabled = false;
	char	  **paused = NULL;
	int			npaused = 0;

	generation = pg_atomic_read_u64(&b->generation);
	pg_memory_barrier();
	quiet = pg_atomic_read_u32(&b->setters) == 0;
	pg_memory_barrier();

	if (OidIsValid(get_extension_oid("idemgate", true)))
	{
		enabled = ActionsEnabled();
		if (enabled && OidIsValid(get_relname_relid("paused_effect_types",
													get_namespace_oid("idemgate", true))))
		{
			ExecSavedExpect(&paused_types_stmt, NULL, NULL, false, 0, SPI_OK_SELECT,
							"could not read idemgate.paused_effect_types");
			npaused = (int) SPI_processed;
			paused = MemoryContextAllocZero(TopMemoryContext, sizeof(char *) * Max(npaused, 1));
			for (int i = 0; i < npaused; i++)
			{
				bool		isnull;
				Datum		d = GetResultDatum(i, 1, &isnull);

				paused[i] = MemoryContextStrdup(TopMemoryContext,
												isnull ? "" : TextDatumGetCString(d));
			}
		}
	}

	/* Swap in the new state; nothing below can fail. */
	for (int i = 0; i < n_local_paused; i++)
		pfree(local_paused[i]);
	if (local_paused != NULL)
		pfree(local_paused);
	local_paused = paused;
	n_local_paused = npaused;
	local_enabled = enabled;
	if (quiet)
		absorbed_generation = generation;
}
