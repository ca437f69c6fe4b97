/*-------------------------------------------------------------------------
 *
 * src/operations/retention.c
 *	  purge and purge_dead_letters: how long personal data stays.
 *
 * Design note. purge(older_than) deletes finished work only: runs in
 * completed or failed_terminal whose last change is older than the bound,
 * together with their approvals, outbox rows, reinjected dead letters and
 * events (matched by key). A run is kept, whatever its age, while
 *   - it has an open dead letter (not reinjected): reinjecting it must
 *     still find the run and its effect, and the dead letter holds the
 *     input a person has to look at;
 *   - one of its effects is not settled (pending, sending or unknown): an
 *     operator still has to resolve, cancel or deliver it.
 * Purge leaves nothing whose run is gone (no event, outbox row, approval
 * or dead letter), also while claims and other calls race with it. A
 * transaction that writes a row belonging to a run, in particular to a
 * finished one, holds a lock on the run row from before it writes until it
 * commits: a duplicate claim FOR NO KEY UPDATE (ON CONFLICT's lock, or
 * src/ledger/claim_direct.c's) while it writes its duplicate event, supersede FOR
 * NO KEY UPDATE on the original, the rest FOR UPDATE or an UPDATE of the run.
 * So purge works in two statements:
 *   1. lock the candidate runs FOR UPDATE SKIP LOCKED. A run another
 *      transaction holds is skipped (purged next time); one whose holder
 *      has committed is locked, and that holder's rows are committed;
 *   2. in a snapshot taken after those locks (ExecSavedLatest, whatever
 *      the isolation level), delete the runs and everything of theirs.
 * One statement would not do: its snapshot is taken before its locks, so a
 * duplicate claim committing in between (it only locked the run, so the
 * lock is granted at once) left its event behind for ever. A writer that
 * comes after the locks waits for purge, then finds the run gone: a claim
 * inserts the key afresh (claimed), the others find no run and write
 * nothing. test/specs/purge_vs_claim.spec shows both orders.
 * In the second statement, what metrics() and the per-type counters count
 * of the doomed rows is added to the hourly rollups (METRICS_ROLLUP_CTES and
 * RUN_METRICS_ROLLUP_CTES in src/operations/metrics.h), so the figures are the same
 * before and after a purge.
 *
 * Finding the candidates must not read what is kept: with a retention of
 * 30 days at a million runs a day, a sequential scan read 30 days of runs
 * every hour to find one hour's worth. A run last changed before the bound
 * was created before it, so the statement also asks created_at < bound,
 * which the BRIN index runs_created_brin answers with the old page ranges
 * only (runs are stored roughly in creation order). A BRIN index costs
 * almost nothing per claim, and created_at never changes, so it never
 * makes an update of a run a non-HOT one.
 *
 * On Citus (docs/citus.md) the same two statements run one shard at a
 * time, each sent to that shard (the / *@buckets* / markers): the worker
 * takes each statement's snapshot when it starts, after the locks, in
 * READ COMMITTED, so purge refuses a transaction that uses one snapshot.
 *
 * Open dead letters stay until an operator calls purge_dead_letters.
 * Events without a key (operator actions such as kill switch changes,
 * endpoint registrations, grants, purges) are the operators' audit trail and
 * hold no personal data; they are never purged.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "citus/distributed.h"
#include "ledger/events.h"
#include "operations/metrics.h"
#include "citus/shard_buckets.h"
#include "citus/statements.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "ledger/tombstones.h"

PG_FUNCTION_INFO_V1(idemgate_purge);
PG_FUNCTION_INFO_V1(idemgate_purge_dead_letters);


/*
 * The runs to purge, locked (see the design note). The locks come before
 * the snapshot purge_stmt reads their rows in.
 */
static SavedStatement doomed_stmt = {
	"SELECT r.idempotency_key FROM idemgate.runs r"
	" WHERE r.state IN ('completed', 'failed_terminal')"
	"   AND r.updated_at < pg_catalog.now() - $1"
	"   AND r.created_at < pg_catalog.now() - $1/*@buckets r*/"	/* implied; see the note */
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.dead_letters d"
	"                   WHERE d.idempotency_key = r.idempotency_key/*@buckets d*/"
	"                     AND d.reinjected_at IS NULL)"
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                   WHERE o.idempotency_key = r.idempotency_key/*@buckets o*/"
	"                     AND o.state NOT IN ('completed', 'failed', 'cancelled'))"
	" FOR UPDATE OF r SKIP LOCKED",
	1, {INTERVALOID}
};

/*
 * Everything of the locked runs $1, and the runs. PURGE_STATEMENT(R) with
 * R the rollups' data-modifying CTEs: with run_metrics_rollup (1.2), or
 * without it on an older schema (README.md, "Upgrading").
 */
#define PURGE_DELETES(RU_BUCKET, TOMBSTONES) \
	", ev AS (" \
	" DELETE FROM idemgate.events e USING doomed x" \
	" WHERE e.idempotency_key = x.idempotency_key/*@buckets e*/ RETURNING 1" \
	"), dl AS (" \
	" DELETE FROM idemgate.dead_letters d USING doomed x" \
	" WHERE d.idempotency_key = x.idempotency_key/*@buckets d*/ RETURNING 1" \
	"), ap AS (" \
	" DELETE FROM idemgate.approvals a USING doomed x" \
	" WHERE a.idempotency_key = x.idempotency_key/*@buckets a*/ RETURNING 1" \
	"), ob AS (" \
	" DELETE FROM idemgate.outbox o USING doomed x" \
	" WHERE o.idempotency_key = x.idempotency_key/*@buckets o*/ RETURNING 1" \
	"), ru AS (" \
	" DELETE FROM idemgate.runs r USING doomed x" \
	" WHERE r.idempotency_key = x.idempotency_key/*@buckets r*/" \
	" RETURNING r.idempotency_key, r.payload_hash, r.state, r.updated_at" RU_BUCKET \
	")" TOMBSTONES \
	" SELECT (SELECT pg_catalog.count(*) FROM ru), (SELECT pg_catalog.count(*) FROM ev)," \
	"        (SELECT pg_catalog.count(*) FROM ap), (SELECT pg_catalog.count(*) FROM ob)," \
	"        (SELECT pg_catalog.count(*) FROM dl)"

#define PURGE_STATEMENT(ROLLUPS, RU_BUCKET, TOMBSTONES) \
	"WITH doomed AS (" \
	" SELECT DISTINCT k.idempotency_key FROM pg_catalog.unnest($1::pg_catalog.text[]) AS " \
	"k(idempotency_key)" \
	")" \
	ROLLUPS		/* what metrics() and run_metrics() count of them is kept */ \
	PURGE_DELETES(RU_BUCKET, TOMBSTONES)

/* With tombstones (1.3, src/ledger/tombstones.c), $2 idemgate.tombstone_retention. */
static SavedStatement purge_stmt = {
	PURGE_STATEMENT(METRICS_ROLLUP_CTES RUN_METRICS_ROLLUP_CTES, "", TOMBSTONE_INSERT_CTE),
	2, {TEXTARRAYOID, INT4OID}
};

/* On Citus with tombstones distributed: each in its run's shard. */
static SavedStatement purge_dist_stmt = {
	PURGE_STATEMENT(METRICS_ROLLUP_CTES RUN_METRICS_ROLLUP_CTES, ", r.bucket",
					TOMBSTONE_INSERT_DIST_CTE),
	2, {TEXTARRAYOID, INT4OID}
};

/* On a 1.2 schema, and on Citus while tombstones are not distributed. */
static SavedStatement purge_stmt_12 = {
	PURGE_STATEMENT(METRICS_ROLLUP_CTES RUN_METRICS_ROLLUP_CTES, "", ""),
	1, {TEXTARRAYOID}
};

static SavedStatement purge_stmt_11 = {
	PURGE_STATEMENT(METRICS_ROLLUP_CTES, "", ""),
	1, {TEXTARRAYOID}
};

/* The same on Citus, one shard's buckets at a time. */
static SavedStatement expire_tombstones_shard_stmt = {
	"DELETE FROM idemgate.tombstones t"
	" WHERE t.purged_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) "
	"pg_catalog.make_interval(secs => $1))"
	"/*@buckets t*/",
	1, {INT4OID}
};

/* Tombstones past idemgate.tombstone_retention go at every purge. */
static SavedStatement expire_tombstones_stmt = {
	"DELETE FROM idemgate.tombstones"
	" WHERE purged_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) "
	"pg_catalog.make_interval(secs => $1))",
	1, {INT4OID}
};

static SavedStatement purge_dead_letters_stmt = {
	"DELETE FROM idemgate.dead_letters WHERE dead_at < pg_catalog.now() - $1",
	1, {INTERVALOID}
};

/* OlderThanArg returns the required, strictly positive older_than argument. */
static Interval *
OlderThanArg(FunctionCallInfo fcinfo)
{
	return IntervalArg(fcinfo, 0, "older_than", 0, IDEMGATE_MAX_RETENTION_USECS,
					   "Pass how long finished work is kept, e.g. interval '30 days' (see "
					   "idemgate.retention).");
}

/* IntervalText renders an interval for an event's details. */
static char *
IntervalText(Interval *iv)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv)));
}

/* ActorName names the role that called, for the audit trail. */
static const char *
ActorName(void)
{
	return GetUserNameFromId(GetSessionUserId(), false);
}

/*
 * PurgeRuns purges the finished runs older than older_than among buckets
 * (an int4[] of one shard's buckets on Citus; 0: every run), adding what
 * it deleted to counts (runs, events, approvals, effects, dead letters).
 * Two statements, the second in a snapshot taken after the first's locks
 * (see the note). On Citus both go to the one shard, whose worker takes
 * each statement's snapshot when it starts (READ COMMITTED, checked by
 * the caller).
 */
static void
PurgeRuns(Interval *older_than, Datum buckets, int64 *counts)
{
	SavedStatement *stmt = !RunMetricsInstalled() ? &purge_stmt_11 :
		!TombstonesInstalled() ? &purge_stmt_12 :
		buckets == (Datum) 0 ? &purge_stmt :
		TombstonesDistributed() ? &purge_dist_stmt : &purge_stmt_12;
	Datum		values[2];
	int			rc;

	values[0] = IntervalPGetDatum(older_than);
	if (ExecSavedInBuckets(&doomed_stmt, values, NULL, false, 0, buckets) != SPI_OK_SELECT)
		elog(ERROR, "purge could not lock its runs");
	if (SPI_processed == 0)
		return;
	values[0] = ResultColumnArray(1, TEXTOID);
	values[1] = Int32GetDatum(IdemgateTombstoneRetentionSecs);
	if (buckets != (Datum) 0)
		rc = ExecSavedInBuckets(stmt, values, NULL, false, 0, buckets);
	else
		rc = ExecSavedLatest(stmt, values, NULL, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "purge statement failed");
	for (int i = 0; i < 5; i++)
	{
		bool		isnull;

		counts[i] += DatumGetInt64(GetResultDatum(0, i + 1, &isnull));
	}
}

/*
 * idemgate_purge implements purge(older_than): deletes finished runs last
 * changed more than older_than ago with everything that belongs to them;
 * returns the number of runs deleted. Writes a purged event every time.
 * On Citus it purges one shard at a time (src/citus/shard_buckets.c).
 */
Datum
idemgate_purge(PG_FUNCTION_ARGS)
{
	Interval   *older_than = OlderThanArg(fcinfo);
	int64		counts[5];
	EventDetails details;

	memset(counts, 0, sizeof(counts));
	ConnectSPI();
	if (IdemgateIsDistributed())
	{
		ListCell   *lc;

		if (IsolationUsesXactSnapshot())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("idemgate.purge on a distributed install runs in READ COMMITTED"),
					 errdetail("Each worker reads a shard in the snapshot of its transaction, "
							   "taken before purge locks the runs."),
					 errhint("Call it outside a REPEATABLE READ or SERIALIZABLE transaction.")));
		foreach(lc, ShardBucketSets(SHARDS_SCAN))
		{
			Datum		shard_buckets = ((ShardSet *) lfirst(lc))->buckets;

			PurgeRuns(older_than, shard_buckets, counts);
			if (TombstonesInstalled() && TombstonesDistributed())
			{
				Datum		secs = Int32GetDatum(IdemgateTombstoneRetentionSecs);

				if (ExecSavedInBuckets(&expire_tombstones_shard_stmt, &secs, NULL, false, 0,
									   shard_buckets) != SPI_OK_DELETE)
					elog(ERROR, "could not expire tombstones");
			}
		}
	}
	else
	{
		PurgeRuns(older_than, (Datum) 0, counts);
		if (TombstonesInstalled())
		{
			Datum		secs = Int32GetDatum(IdemgateTombstoneRetentionSecs);

			ExecSavedExpect(&expire_tombstones_stmt, &secs, NULL, false, 0, SPI_OK_DELETE,
							"could not expire tombstones");
		}
	}

	DetailsInit(&details);
	DetailsInt(&details, "runs", counts[0]);
	DetailsText(&details, "older_than", IntervalText(older_than));
	DetailsInt(&details, "events", counts[1]);
	DetailsInt(&details, "approvals", counts[2]);
	DetailsInt(&details, "effects", counts[3]);
	DetailsInt(&details, "dead_letters", counts[4]);
	RecordEvent(NULL, NULL, "purged", ActorName(), DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_INT64(counts[0]);
}

/*
 * idemgate_purge_dead_letters implements purge_dead_letters(older_than):
 * deletes dead letters, open or reinjected, that died more than older_than
 * ago, with the full payloads they hold. Returns how many were deleted.
 */
Datum
idemgate_purge_dead_letters(PG_FUNCTION_ARGS)
{
	Interval   *older_than = OlderThanArg(fcinfo);
	Datum		values[1];
	int64		n;
	EventDetails details;

	ConnectSPI();
	values[0] = IntervalPGetDatum(older_than);
	ExecSavedExpect(&purge_dead_letters_stmt, values, NULL, false, 0, SPI_OK_DELETE,
					"purge_dead_letters statement failed");
	n = (int64) SPI_processed;

	DetailsInit(&details);
	DetailsInt(&details, "dead_letters", n);
	DetailsText(&details, "older_than", IntervalText(older_than));
	RecordEvent(NULL, NULL, "dead_letters_purged", ActorName(), DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_INT64(n);
}
