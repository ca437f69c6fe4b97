/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher.c
 *	  The dispatcher background worker: claim due effects,
 *	  POST them to their registered endpoints, record each outcome.
 *
 * Design note.
 *
 * Files. This file is the loop: rounds, sending, collecting, shutdown.
 * What a round claims is src/delivery/claiming.c, what becomes of each
 * finished item src/delivery/outcomes.c, the first dispatcher's
 * housekeeping src/delivery/housekeeping.c, how each transaction runs
 * src/delivery/worker_transactions.c; the items they share,
 * src/delivery/dispatch_items.h.
 *
 * Processes. The launcher (src/delivery/launcher.c) starts idemgate.dispatchers
 * dynamic workers in idemgate.database and restarts any that exit. The
 * provider id is read from a response by src/delivery/answer_body.c, and
 * dispatcher_status() reads the shared slots (src/operations/dispatcher_status.c).
 * A dispatcher whose database has no idemgate extension yet stays idle.
 *
 * States of an effect as the dispatcher sees them:
 *
 *   pending --claim (commit!)--> sending --POST--> completed
 *                                   |          \-> pending (retry, backoff)
 *                                   |          \-> unknown / failed
 *                                   \--kill switch off before the POST--> pending
 *                                   \--crash: lease expires--> unknown (or
 *                                      pending when the endpoint honours the key)
 *
 * The claim (FOR UPDATE OF outbox SKIP LOCKED; state sending, attempts + 1,
 * a lease owned by a fresh uuid per claim, expiring after the endpoint
 * timeout plus a margin) is COMMITTED before any byte is sent. So a crash
 * at any point leaves the effect either pending and never sent, or
 * sending; SettleExpiredLeases (run in a round at most once a second, by any
 * dispatcher) turns an expired sending lease into unknown, never silently
 * into a second send. Lease owners name their dispatcher and server life,
 * so a starting dispatcher settles at once the leases of dispatchers that
 * are gone (src/delivery/dispatcher_leases.c) instead of waiting for them
 * to expire. Outcomes are recorded with CompleteEffects/FailEffectWith
 * (src/outbox/outbox.c), the statements the pull API uses too, under the
 * lease owner check, so a late outcome for a lease that was settled
 * meanwhile is ignored.
 *
 * Kill switch: ActionsEnabled() is checked in the claiming transaction and
 * again in a short transaction immediately before the claimed requests are
 * handed to libcurl; when it is off by then, the claimed effects go back to
 * pending with the attempt uncounted (held, not lost). The last word is the
 * send barrier's (src/delivery/send_barrier.c), checked by libcurl right before a
 * request's first byte: a switch-off or pause that has committed stops
 * every request not yet written, which also goes back to pending.
 *
 * Throughput. Requests are sent concurrently through one libcurl multi
 * handle (src/delivery/http.c) kept for the life of the process, so keep-alive
 * connections are reused across rounds; at most idemgate.max_in_flight are
 * in flight. Finished requests are recorded in batches, in the same
 * transaction as the next claim, so a busy dispatcher commits once per
 * batch rather than once per effect. If that transaction fails, each
 * outcome is retried alone in its own transaction (one bad row cannot
 * hold up the others); an outcome that still cannot be recorded is left
 * to lease expiry.
 *
 * Endpoint limits. An effect whose endpoint has a rate_limit or
 * max_in_flight waits in a local queue until src/policy/rate_limit.c (shared by
 * all dispatchers) lets it start; waiting effects count against the
 * capacity, so no more is claimed than can go out.
 *
 * Waking. WakeDispatcherAtCommit (src/core/dispatcher_wake.c) sets our latch when a
 * transaction that enqueued effects commits; polling every
 * idemgate.poll_interval is only the fallback (for retries whose backoff
 * has elapsed). A claim that filled its batch loops again at once.
 *
 * Postmaster death is checked on every loop path (idle wait, before and
 * after each claim/record transaction and each libcurl poll), so a
 * dispatcher stops sending within milliseconds of the postmaster's death
 * and never keeps the old shared memory attached. Statistics are reported
 * (pgstat_report_stat) after every transaction, so autovacuum sees the
 * outbox churn while the dispatcher runs.
 *
 * Housekeeping (first dispatcher only, each call in its own transaction,
 * errors logged and the loop goes on): idemgate.expire_approvals(),
 * idemgate.complete_settled_runs(n) (the safety net of run completion:
 * the next n approved runs are checked for effects all settled, see
 * docs/outbox.md) and idemgate.publish_alerts() every second,
 * idemgate.purge() hourly when idemgate.retention > 0; each only when the
 * function exists.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "common/jsonapi.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "core/crypto.h"
#include "delivery/dispatcher.h"
#include "delivery/claiming.h"
#include "delivery/dispatch_items.h"
#include "delivery/dispatcher_leases.h"
#include "citus/distributed.h"
#include "core/dispatcher_shmem.h"
#include "core/dispatcher_wake.h"
#include "policy/endpoint_circuits.h"
#include "policy/endpoints.h"
#include "core/guc.h"
#include "delivery/housekeeping.h"
#include "delivery/http.h"
#include "delivery/outcomes.h"
#include "policy/killswitch.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "outbox/outbox_lookups.h"
#include "core/pg_compat.h"
#include "policy/rate_limit.h"
#include "delivery/answer_body.h"
#include "policy/secrets.h"
#include "delivery/send_barrier.h"
#include "policy/status_url.h"
#include "citus/statements.h"
#include "core/worker_signals.h"
#include "delivery/worker_transactions.h"

/* Longest sleep while effects wait for their endpoint's rate limit. */
#define WAITING_POLL_MS		5
/* Longest wait in curl_multi_poll while requests are in flight. */
#define MULTI_POLL_MS		10
/* Longest an outcome waits to be batched with others before recording. */
#define RECORD_DELAY_MS		20
/* On SIGTERM, how long requests in flight may still finish. */
#define SHUTDOWN_GRACE_MS	3000
/* How often a dispatcher settles expired leases (SettleExpiredLeases). */
#define SETTLE_INTERVAL_MS	1000
/* How often effects held behind open circuits are checked against circuit_max_hold. */
#define HELD_CHECK_MS		10000

/*
 * Status look-ups of unknown effects (src/outbox/outbox_lookups.c) are claimed at
 * most once a second, LOOKUP_BATCH at a time: unknown effects are rare,
 * and their look-ups wait seconds to an hour between asks anyway.
 */
#define LOOKUP_INTERVAL_MS	1000
#define LOOKUP_BATCH		16

/* The dispatcher's items (src/delivery/dispatch_items.h). */
DispatchItems dispatch = {.node_group = -1};

/* The dispatcher's state across loop iterations. */
static int	my_slot = -1;
static HttpRequest **done_buf = NULL;
static int	done_buf_len = 0;
static TimestampTz next_settle = 0;	/* when RoundWork settles expired leases next */
static bool gone_leases_settled = false;	/* see src/delivery/dispatcher_leases.c */
static TimestampTz next_held_check = 0;	/* when DeadLetterHeldTooLong runs next */
static TimestampTz next_lookups = 0;	/* when ClaimLookups runs next */

/* ---------------------------------------------------------------- SQL */


/* ----------------------------------------------------- outcomes */








/* ---------------------------------------------------------- rounds */


/* A Citus worker before distribute(): no claims, no housekeeping. */
static bool awaiting_distribute = false;



















/* What one round asks for and got (RoundWork's argument). */
typedef struct RoundRequest
{
	int			limit;
	int			claimed;
	bool		settled_gone;	/* gone dispatchers' leases were settled */
} RoundRequest;

/* RoundWork is DoRound's transaction (a RunInTransaction work). */
static void
RoundWork(void *arg)
{
	RoundRequest *round = (RoundRequest *) arg;

	if (ExtensionInstalled())
	{
		dispatch.node_group = DispatcherLeaseNode();	/* on Citus (after distribute()) */
		if (!dispatch.solo_recording)	/* else recorded afterwards, one by one */
			RecordQueued();
		awaiting_distribute = CitusWorkerBeforeDistribute();
		if (awaiting_distribute)
			return;
		if (!gone_leases_settled)
		{
			int			n = SettleGoneDispatchersLeases();

			if (n > 0)
				ereport(LOG,
						(errmsg("idemgate dispatcher: settled %d effects leased by dispatchers "
								"that are gone", n)));
			round->settled_gone = true;
		}
		/* Leases last at least 10 s: settling once a second is enough. */
		/* On Citus each worker settles its own shards; the coordinator has none. */
		if (GetCurrentTimestamp() >= next_settle && dispatch.node_group != 0)
		{
			SettleExpiredLeases(NULL);
			next_settle = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  dispatch.node_group > 0 ?
													  WORKER_SWEEP_MS : SETTLE_INTERVAL_MS);
		}
		if (round->limit > 0 && SchemaMatchesLibrary() && ActionsEnabled())
		{
			ClaimEffects(round->limit);
			round->claimed = dispatch.n_started;
			if (dispatch.n_started < round->limit && GetCurrentTimestamp() >= next_lookups)
			{
				ClaimLookups(Min(round->limit - dispatch.n_started, LOOKUP_BATCH));
				next_lookups = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   LOOKUP_INTERVAL_MS);
			}
			if (GetCurrentTimestamp() >= next_held_check)
			{
				DeadLetterHeldTooLong();
				next_held_check = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HELD_CHECK_MS);
			}
		}
	}
	else if (dispatch.n_to_record > 0)
		elog(WARNING, "idemgate dispatcher: extension dropped with effects in flight");
}

/*
 * DoRound runs one transaction: record the finished outcomes, settle
 * expired leases, and claim up to limit effects when the kill switch is on.
 * Returns how many were claimed (placed in started[]), or -1 on error.
 */
static int
DoRound(int limit, MemoryContext loop_cxt)
{
	RoundRequest round = {limit, 0, false};
	bool		failed;

	StopIfPostmasterDied();
	pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: recording and claiming");
	failed = !RunInTransaction(RoundWork, &round, loop_cxt);
	StopIfPostmasterDied();

	if (failed)
	{
		/* The claim rolled back: nothing of it may be sent. */
		for (int i = 0; i < dispatch.n_started; i++)
		{
			ClaimBatch *b = dispatch.started[i]->batch;

			if (--b->remaining == 0 && b != dispatch.claiming)
				MemoryContextDelete(b->cxt);
		}
		dispatch.n_started = 0;
		if (dispatch.claiming != NULL)
			MemoryContextDelete(dispatch.claiming->cxt);
		dispatch.claiming = NULL;
		if (dispatch.n_to_record > 0)
			RecordAlone(loop_cxt);
		return -1;
	}
	if (dispatch.solo_recording && dispatch.n_to_record > 0)
		RecordAlone(loop_cxt);
	else
		FinishQueued();
	dispatch.solo_recording = false;
	if (round.settled_gone)
		gone_leases_settled = true;
	pg_atomic_fetch_add_u64(&dispatch.shared->rounds, 1);
	pg_atomic_write_u64(&dispatch.shared->last_round_at, (uint64) GetCurrentTimestamp());
	return round.claimed;
}

/*
 * ReadActionsEnabled reads the kill switch, and the switch and pauses for
 * the send barrier (a RunInTransaction work).
 */
static void
ReadActionsEnabled(void *arg)
{
	*(bool *) arg = ExtensionInstalled() && ActionsEnabled();
	SendBarrierRefresh();
}

/* RefreshSendBarrier reads the committed switch and pauses (a RunInTransaction work). */
static void
RefreshSendBarrier(void *arg)
{
	SendBarrierRefresh();
}

/*
 * StartWaiting starts the waiting effects whose endpoint's rate_limit and
 * max_in_flight allow it now (src/policy/rate_limit.c), in claim order. One that
 * waited longer than half the lease margin goes back to pending unsent, so
 * its lease can never expire before its outcome is recorded.
 */
static void
StartWaiting(void)
{
	int			kept = 0;
	bool		started = false;
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < dispatch.n_waiting; i++)
	{
		Claimed    *it = dispatch.waiting[i];
		int64		wait_usecs;

		if (got_sigterm ||
			TimestampDifferenceExceeds(it->waiting_since, now, LEASE_MARGIN_SECS * 1000 / 2))
		{
			it->fate = FATE_RELEASE;
			QueueForRecording(it);
		}
		else if (RateLimitTryStart(it->req.effect_type, it->rate_limit, it->endpoint_max,
								   &wait_usecs))
		{
			it->limit_counted = true;
			if (!HttpStart(&it->req))
			{
				RateLimitFinish(it->req.effect_type);
				it->limit_counted = false;
				QueueForRecording(it);
			}
			else
				started = true;
		}
		else
			dispatch.waiting[kept++] = it;
	}
	dispatch.n_waiting = kept;
	/* Out now, at the start the limiter reserved: not after a round. */
	if (started)
		HttpKick();
}

/*
 * SendStarted hands the claimed effects to libcurl after re-checking the
 * kill switch (immediately before the send) and each endpoint URL. Effects
 * that may not be sent are queued for recording (released or rejected).
 */
static void
SendStarted(MemoryContext loop_cxt)
{
	bool		enabled = false;

	if (dispatch.n_started == 0)
		return;

	/* An error reading the switch counts as off: nothing is sent. */
	if (!RunInTransaction(ReadActionsEnabled, &enabled, loop_cxt))
		enabled = false;
	StopIfPostmasterDied();

	for (int i = 0; i < dispatch.n_started; i++)
	{
		Claimed	   *it = dispatch.started[i];
		char	   *why;

		if (!enabled || got_sigterm)
		{
			it->fate = FATE_RELEASE;
			QueueForRecording(it);
		}
		else if (it->fate == FATE_HOLD)
		{
			static TimestampTz said_at = 0;	/* one line per hold period, not per effect */

			if (TimestampDifferenceExceeds(said_at, GetCurrentTimestamp(),
										   IDEMGATE_SECRET_HOLD_SECS * 1000))
			{
				said_at = GetCurrentTimestamp();
				ereport(LOG,
						(errmsg("idemgate dispatcher: effects of type \"%s\" held for %d s: "
								"its endpoint names secret \"%s\", %s",
								it->req.effect_type, IDEMGATE_SECRET_HOLD_SECS, it->secret_missing,
								SecretsProblem() ? psprintf("but %s", SecretsProblem()) :
								"which idemgate.secrets_file lacks"),
						 errhint("Add the secret to the file and reload; the alert secret_missing "
								 "names the endpoint meanwhile.")));
			}
			QueueForRecording(it);
		}
		else if (!EndpointUrlAllowed(it->req.url, &why))
		{
			it->fate = FATE_DENIED;
			it->denied_why = MemoryContextStrdup(it->batch->cxt,
												 psprintf("endpoint URL no longer allowed: %s",
														  why));
			QueueForRecording(it);
		}
		else if (it->rate_limit > 0 || it->endpoint_max > 0)
		{
			it->waiting_since = GetCurrentTimestamp();
			dispatch.waiting[dispatch.n_waiting++] = it;	/* StartWaiting starts it */
		}
		else if (!HttpStart(&it->req))
			QueueForRecording(it);	/* a local failure: recorded as transport */
	}
	dispatch.n_started = 0;
	StartWaiting();
	pg_atomic_write_u32(&dispatch.shared->in_flight, (uint32) HttpInFlight());
}

/* CollectFinished moves finished requests to the list to record. */
static void
CollectFinished(long timeout_ms)
{
	int			n;

	if (HttpInFlight() == 0)
		return;
	StopIfPostmasterDied();
	/* The wait also ends when the postmaster dies (its pipe reads EOF). */
	n = HttpPoll(timeout_ms, postmaster_alive_fds[POSTMASTER_FD_WATCH],
				 done_buf, done_buf_len);
	StopIfPostmasterDied();
	for (int i = 0; i < n; i++)
	{
		Claimed    *it = (Claimed *) done_buf[i];

		if (it->req.held)
			it->fate = FATE_RELEASE;	/* the send barrier refused it unsent */
		if (it->limit_counted)
		{
			RateLimitFinish(it->req.effect_type);
			it->limit_counted = false;
		}
		QueueForRecording(it);
	}
	pg_atomic_write_u32(&dispatch.shared->in_flight, (uint32) HttpInFlight());
}





/* ------------------------------------------------------- dispatcher */

/* ClearSlot empties our shared slot when the process exits. */
static void
ClearSlot(int code, Datum arg)
{
	if (dispatch.shared != NULL)
	{
		dispatch.shared->procno = -1;
		pg_write_barrier();
		dispatch.shared->pid = 0;
		pg_atomic_write_u32(&dispatch.shared->in_flight, 0);
	}
}

/*
 * ShutdownDispatcher lets requests in flight finish for a short grace
 * period, aborts the rest, records every outcome, and exits.
 */
static void
ShutdownDispatcher(MemoryContext loop_cxt)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SHUTDOWN_GRACE_MS);

	pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: shutting down");
	StartWaiting();				/* got_sigterm: gives the waiting ones back */
	while (HttpInFlight() > 0 && GetCurrentTimestamp() < deadline)
		CollectFinished(MULTI_POLL_MS);	/* stops if the postmaster died */
	if (HttpInFlight() > 0)
	{
		/* Abort what is left: not sent → released; sent → may have happened. */
		int			n = 0;
		Claimed	  **pending = palloc(sizeof(Claimed *) * done_buf_len);

		n = HttpAbortAll((HttpRequest **) pending, done_buf_len);
		for (int i = 0; i < n; i++)
		{
			if (!pending[i]->req.request_sent)
				pending[i]->fate = FATE_RELEASE;
			QueueForRecording(pending[i]);
		}
	}
	if (dispatch.n_to_record > 0)
		(void) DoRound(0, loop_cxt);
	HttpShutdown();
	proc_exit(0);
}

/*
 * DispatcherSetUp connects to the database, sets the session up for the
 * dispatcher's statements and takes its shared slot (exits when another
 * process holds it).
 */
static void
DispatcherSetUp(Oid dboid)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, IdemgateSigterm);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("idemgate dispatcher");
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION);
	/*
	 * No JIT: our statements are short index scans, but a generic plan's
	 * estimate (LIMIT $1 unknown) or a housekeeping view can pass
	 * jit_above_cost, and then every round spent milliseconds compiling
	 * and LLVM kept the memory (3k effects/s and 140 MB anonymous RSS
	 * seen in bench/dispatch before this).
	 */
	SetConfigOption("jit", "off", PGC_USERSET, PGC_S_SESSION);
	/*
	 * Our commits are flushed before we go on, whatever the cluster, database
	 * or role says (on, or remote_apply when that is set): a claim must be
	 * durable before its request is sent. With synchronous_commit off
	 * (bench/soak runs its database so) a crash or a killed postmaster lost
	 * the claims and completions of the last WAL writer cycle; recovery put
	 * those effects back to pending and they were sent again — a second
	 * delivery to endpoints that do not honour the Idempotency-Key
	 * (docs/dispatcher.md).
	 */
	if (strcmp(GetConfigOption("synchronous_commit", false, false), "remote_apply") != 0)
		SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);

	HotPathPlanning(true);

	if (DispatcherShmem == NULL || my_slot < 0 || my_slot >= IDEMGATE_MAX_DISPATCHERS)
		elog(ERROR, "idemgate dispatcher started without its shared memory");
	if (SlotTakenByLiveProcess(my_slot))
	{
		ereport(LOG, (errmsg("idemgate dispatcher %d already runs; exiting", my_slot)));
		proc_exit(0);
	}
	dispatch.shared = &DispatcherShmem->slots[my_slot];
	dispatch.shared->pid = MyProcPid;
	pg_write_barrier();
	dispatch.shared->procno = ProcNumberOf(MyProc);
	pg_atomic_write_u64(&dispatch.shared->started_at, (uint64) GetCurrentTimestamp());
	DispatcherLeaseBegin(my_slot);
	SendBarrierBegin(my_slot);
	RateLimitBegin(my_slot);
	on_shmem_exit(ClearSlot, (Datum) 0);

	done_buf_len = IDEMGATE_MAX_IN_FLIGHT;
	done_buf = MemoryContextAlloc(TopMemoryContext, sizeof(HttpRequest *) * done_buf_len);
	dispatch.started = MemoryContextAlloc(TopMemoryContext, sizeof(Claimed *) * done_buf_len);
	dispatch.waiting = MemoryContextAlloc(TopMemoryContext, sizeof(Claimed *) * done_buf_len);
	HttpInit();
}

/* IdemgateDispatcherMain is one dispatcher's loop (see the design note). */
void
IdemgateDispatcherMain(Datum main_arg)
{
	Oid			dboid;
	MemoryContext loop_cxt;
	TimestampTz next_poll = 0;
	bool		woken = true;
	bool		last_full = false;

	my_slot = DatumGetInt32(main_arg);
	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	DispatcherSetUp(dboid);

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "idemgate dispatcher loop",
									 ALLOCSET_DEFAULT_SIZES);
	ereport(LOG, (errmsg("idemgate dispatcher %d started", my_slot)));

	for (;;)
	{
		TimestampTz now;
		int			in_flight;
		int			capacity;
		int			batch;
		int			refill;
		bool		want_claim;

		CHECK_FOR_INTERRUPTS();
		StopIfPostmasterDied();
		ReloadConfigIfPending();
		MemoryContextReset(loop_cxt);
		MemoryContextSwitchTo(loop_cxt);

		if (got_sigterm)
			ShutdownDispatcher(loop_cxt);

		/* A switch or pause committed: read it before libcurl sends more. */
		if (SendBarrierStale() && HttpInFlight() > 0)
			(void) RunInTransaction(RefreshSendBarrier, NULL, loop_cxt);
		CollectFinished(0);
		if (dispatch.n_waiting > 0)
			StartWaiting();
		in_flight = HttpInFlight();
		capacity = Min(IdemgateMaxInFlight, IDEMGATE_MAX_IN_FLIGHT) -
			in_flight - dispatch.n_waiting;
		batch = Min(IdemgateBatchSize, capacity);
		refill = Max(1, Min(IdemgateBatchSize, IdemgateMaxInFlight) / 2);
		now = GetCurrentTimestamp();

		/*
		 * Claim when woken, after a full batch (a backlog) or when the poll
		 * interval is up; while requests are in flight, a backlog waits for
		 * half the slots to free so that each commit carries a real batch.
		 */
		want_claim = batch > 0 && (woken || last_full || now >= next_poll) &&
			(in_flight == 0 || batch >= refill || !last_full);

		/*
		 * Record when nothing is left in flight, when enough outcomes have
		 * piled up to be worth a commit, when the oldest has waited
		 * RECORD_DELAY_MS (a slow request must not hold up the others'
		 * outcomes), or alongside a claim.
		 */
		if (want_claim ||
			(dispatch.n_to_record > 0 &&
			 (in_flight == 0 || dispatch.n_to_record >= refill ||
			  TimestampDifferenceExceeds(dispatch.oldest_to_record_at, now, RECORD_DELAY_MS))))
		{
			int			claimed;

			if (want_claim)
			{
				woken = false;
				next_poll = TimestampTzPlusMilliseconds(now, IdemgatePollIntervalMs);
			}
			claimed = DoRound(want_claim ? batch : 0, loop_cxt);
			if (want_claim)
				last_full = (claimed == batch);
			if (claimed < 0)
			{
				/* The round failed: back off for a poll interval. */
				last_full = false;
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 IdemgatePollIntervalMs, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				continue;
			}
			SendStarted(loop_cxt);
		}

		/* Housekeeping, by the first dispatcher only (src/delivery/housekeeping.c). */
		if (my_slot == 0 && now >= HousekeepingDueAt() && !awaiting_distribute)
			Housekeep(now, loop_cxt);

		pgstat_report_activity(STATE_IDLE, NULL);

		/* Wait: for transfers while any are in flight, else for the latch. */
		if (HttpInFlight() > 0)
		{
			CollectFinished(MULTI_POLL_MS);
			if (MyLatch->is_set)
			{
				ResetLatch(MyLatch);
				woken = true;
			}
		}
		else if (!last_full && dispatch.n_to_record == 0)
		{
			long		sleep_ms;
			int			rc;

			now = GetCurrentTimestamp();
			sleep_ms = (long) ((Min(next_poll,
									 my_slot == 0 ? HousekeepingDueAt() : next_poll) -
								now) / 1000);
			sleep_ms = Max(sleep_ms, 0);
			if (dispatch.n_waiting > 0)
				sleep_ms = Min(sleep_ms, WAITING_POLL_MS);	/* rate-limited starts */
			pgstat_report_stat(true);	/* idle: flush what is pending */
			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   sleep_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			if (rc & WL_LATCH_SET)
				woken = true;
		}
	}
}

