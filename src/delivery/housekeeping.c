/*-------------------------------------------------------------------------
 *
 * src/delivery/housekeeping.c
 *	  The first dispatcher's housekeeping (docs/dispatcher.md,
 *	  "Housekeeping"): expire_approvals(), complete_settled_runs() and
 *	  publish_alerts() every second (on Citus: docs/citus.md), purge()
 *	  hourly when idemgate.retention is set; each in its own transaction,
 *	  bounded, and only when the function exists. An error is logged and
 *	  the loop goes on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "citus/statements.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "delivery/dispatch_items.h"
#include "delivery/housekeeping.h"
#include "delivery/worker_transactions.h"

#define HOUSEKEEPING_MS		1000
/* Longest a per-second housekeeping call may hold up the loop. */
#define HOUSEKEEPING_TIMEOUT_MS	1000
/* Pause of the per-second calls after one failed (e.g. timed out). */
#define HOUSEKEEPING_BACKOFF_MS	10000
/*
 * On Citus the alerts read every shard, some 16 statements across the
 * cluster (about 0.3 s), which Citus plans anew on the workers each time:
 * 65-200 ms of a worker's CPU per pass with 16 shards each (bench/README).
 * The coordinator publishes them every 30 s (10 s before 1.3: a third of
 * an idle worker's CPU), and, sending nothing itself, can give them
 * longer than the per-second calls.
 */
#define DISTRIBUTED_ALERTS_MS			30000
#define DISTRIBUTED_ALERTS_TIMEOUT_MS	10000
#define PURGE_INTERVAL_MS	(SECS_PER_HOUR * 1000)
/* The first purge runs this long after the dispatcher starts. */
#define FIRST_PURGE_DELAY_MS	(SECS_PER_MINUTE * 1000)

static TimestampTz next_housekeeping = 0;
static TimestampTz next_purge = 0;
static TimestampTz next_distributed_alerts = 0;

static SavedStatement function_exists_stmt = {
	"SELECT pg_catalog.to_regprocedure($1) IS NOT NULL",
	1, {TEXTOID}
};

static SavedStatement expire_approvals_stmt = {
	"SELECT idemgate.expire_approvals()", 0, {0}
};

static SavedStatement complete_settled_runs_stmt = {
	"SELECT idemgate.complete_settled_runs($1::pg_catalog.int4)",
	1, {FLOAT8OID}
};

static SavedStatement publish_alerts_stmt = {
	"SELECT idemgate.publish_alerts()", 0, {0}
};

static SavedStatement purge_stmt = {
	"SELECT idemgate.purge(pg_catalog.make_interval(secs => $1))",
	1, {FLOAT8OID}
};

/* A housekeeping call (HousekeepingWork's argument). */
typedef struct HousekeepingCall
{
	const char *signature;
	SavedStatement *stmt;
	double		arg;
	int			timeout_ms;		/* statement_timeout for the call; 0 = none */
} HousekeepingCall;

/* HousekeepingWork runs the call if its function exists (a RunInTransaction work). */
static void
HousekeepingWork(void *arg)
{
	HousekeepingCall *call = (HousekeepingCall *) arg;
	Datum		name;
	bool		isnull;

	if (!ExtensionInstalled())
		return;
	name = CStringGetTextDatum(call->signature);
	ExecSaved(&function_exists_stmt, &name, NULL, true, 1);
	if (SPI_processed == 1 && DatumGetBool(GetResultDatum(0, 1, &isnull)) && !isnull)
	{
		Datum		a = Float8GetDatum(call->arg);

		pgstat_report_activity(STATE_RUNNING, call->stmt->sql);
		/* A background worker's SPI calls are not timed by statement_timeout. */
		if (call->timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, call->timeout_ms);
		ExecSaved(call->stmt, call->stmt->nargs > 0 ? &a : NULL, NULL, false, 0);
		disable_timeout(STATEMENT_TIMEOUT, false);
	}
}

/*
 * HotPathPlanning sets how this session plans: for the rounds (hot), only
 * index scans, and plain ones; for housekeeping, the configured planner.
 * Every statement of a round (claim, completion, failure, settle) is an
 * index probe by design, but a generic plan is made once, possibly while
 * the outbox is empty, and with a seqscan allowed it became a sequential
 * scan of the whole outbox for every claim once the table had grown
 * (bench/dispatch: 71% of the dispatcher's CPU). A bitmap index scan never
 * marks the index entries of dead rows (kill_prior_tuple), and every
 * effect leaves dead entries in the partial indexes on state until
 * vacuum; a plain index scan skips them after its first visit.
 */
void
HotPathPlanning(bool hot)
{
	SetConfigOption("enable_seqscan",
					hot ? "off" : GetConfigOptionResetString("enable_seqscan"),
					PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("enable_bitmapscan",
					hot ? "off" : GetConfigOptionResetString("enable_bitmapscan"),
					PGC_USERSET, PGC_S_SESSION);
}

/*
 * RunIfExists calls a housekeeping function in its own transaction when it
 * exists, cancelled after timeout_ms (0 = no limit); an error is logged, the
 * loop goes on, and false is returned.
 */
static bool
RunIfExists(const char *signature, SavedStatement *stmt, double arg,
			int timeout_ms, MemoryContext loop_cxt)
{
	HousekeepingCall call = {signature, stmt, arg, timeout_ms};
	bool		ok;

	HotPathPlanning(false);
	ok = RunInTransaction(HousekeepingWork, &call, loop_cxt);
	HotPathPlanning(true);
	disable_timeout(STATEMENT_TIMEOUT, false);	/* after an error too */
	/* A saved plan that failed (e.g. function dropped) is prepared afresh. */
	if (!ok)
	{
		if (stmt->plan != NULL)
			SPI_freeplan(stmt->plan);
		stmt->plan = NULL;
		return false;
	}
	return true;
}

/*
 * Housekeep runs the housekeeping calls that are due, each in its own
 * transaction. On Citus (docs/citus.md) each worker expires the approvals
 * and completes the settled runs of its own shards, every 10 s; the
 * coordinator publishes the alerts and purges (each a read of every
 * shard).
 */
void
Housekeep(TimestampTz now, MemoryContext loop_cxt)
	{
		bool		ok;

		/*
		 * The per-second calls run in this loop, so they are bounded
		 * (HOUSEKEEPING_TIMEOUT_MS): a slow one must not hold up
		 * requests in flight. After a failure they pause a while.
		 */
		pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: housekeeping");
		ok = dispatch.node_group == 0 ||	/* on Citus, each worker for its shards */
			RunIfExists("idemgate.expire_approvals()", &expire_approvals_stmt, 0,
						HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
		StopIfPostmasterDied();
		if (dispatch.node_group != 0)	/* on Citus, each worker for its shards */
			ok &= RunIfExists("idemgate.complete_settled_runs(integer)",
							  &complete_settled_runs_stmt, IDEMGATE_SETTLED_RUNS_BATCH,
							  HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
		StopIfPostmasterDied();
		if (dispatch.node_group < 0)
			ok &= RunIfExists("idemgate.publish_alerts()", &publish_alerts_stmt, 0,
							  HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
		else if (dispatch.node_group == 0 && now >= next_distributed_alerts)
		{
			/* On Citus, the coordinator's, which sends nothing. */
			(void) RunIfExists("idemgate.publish_alerts()", &publish_alerts_stmt, 0,
							   DISTRIBUTED_ALERTS_TIMEOUT_MS, loop_cxt);
			next_distributed_alerts = TimestampTzPlusMilliseconds(now, DISTRIBUTED_ALERTS_MS);
		}
		StopIfPostmasterDied();
		next_housekeeping = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														!ok ? HOUSEKEEPING_BACKOFF_MS :
														dispatch.node_group > 0 ?
														WORKER_SWEEP_MS : HOUSEKEEPING_MS);
		if (IdemgateRetentionSecs > 0 && dispatch.node_group <= 0 && now >= next_purge)
		{
			if (next_purge != 0)
				(void) RunIfExists("idemgate.purge(interval)", &purge_stmt,
								   (double) IdemgateRetentionSecs, 0, loop_cxt);
			next_purge = TimestampTzPlusMilliseconds(now, next_purge == 0 ?
													 FIRST_PURGE_DELAY_MS : PURGE_INTERVAL_MS);
		}
	}

/* HousekeepingDueAt tells when Housekeep has something to do next. */
TimestampTz
HousekeepingDueAt(void)
{
	return next_housekeeping;
}
