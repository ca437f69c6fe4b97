/*-------------------------------------------------------------------------
 *
 * src/ledger/run_completion.c
 *	  Run completion by its effects: the runs whose effects are all settled
 *	  end completed, or failed_terminal when one failed for good, and the
 *	  safety net that looks for such runs. One of the three files of the
 *	  runs table's writer (runs.c, run_claim.c, run_completion.c).
 *
 * Design note. The effect row changes first, then the run is locked and
 * checked again in a snapshot taken after the lock (docs/outbox.md,
 * "Completing a run"): two sibling effects finishing at once never leave
 * their run approved.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "ledger/claim_direct.h"
#include "core/crypto.h"
#include "ledger/dead_letters.h"
#include "citus/distributed.h"
#include "core/doc_limits.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "ledger/payload_hmac.h"
#include "ledger/payload_mismatches.h"
#include "ledger/runs.h"
#include "citus/shard_autocommit.h"
#include "citus/shard_buckets.h"
#include "citus/statements.h"
#include "core/sqlstates.h"
#include "ledger/tombstones.h"

/*
 * The key is the index condition of every statement on a batch of keys
 * below: "(state = 'approved') IS TRUE" hides the state test from the
 * planner, which would otherwise scan runs_open_idx (every run in flight)
 * and compare each with the whole batch — with history in the table the
 * statistics make that look cheap (bench/dispatch: 0.22 of the empty
 * database's deliveries per second with 1M finished runs).
 *
 * Completing runs, in two statements for a batch of keys. First lock the
 * approved runs, in key order (two batches never deadlock): a sibling
 * effect completing at the same time in another transaction serialises
 * here. Then, in a snapshot taken after the locks, whatever the isolation
 * level (ExecSavedLatest: under REPEATABLE READ or SERIALIZABLE the
 * transaction's snapshot may predate the sibling's commit, and both would
 * leave the run approved for ever), complete those with no open effect,
 * storing
 * {"effects": [...]} when the run has no result of its own (NULL, or the
 * failure record fail() left before the run was recovered; docs/n8n.md). The
 * run row records this change itself (a run with effects only ever
 * completes here, and a completed run never changes again):
 * idemgate.key_history shows it as a state_changed entry, so no event row
 * is written (bench/README.md).
 */
static SavedStatement lock_runs_stmt = {
	"SELECT r.idempotency_key FROM idemgate.runs r"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)/*@bucket r*//*@route $1*/"
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE"
	" ORDER BY r.idempotency_key FOR UPDATE OF r",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

static SavedStatement complete_runs_stmt = {
	"UPDATE idemgate.runs r"
	" SET state = CASE WHEN EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                               WHERE o.idempotency_key OPERATOR(pg_catalog.=) "
	"r.idempotency_key/*@bucket o*/"
	"                                 AND o.state OPERATOR(pg_catalog.=) 'failed')"
	"                  THEN 'failed_terminal' ELSE 'completed' END,"
	"     version = r.version OPERATOR(pg_catalog.+) 1,"
	"     updated_at = pg_catalog.now(),"
	"     result = CASE WHEN NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) "
	"r.idempotency_key/*@bucket o*/"
	"                                      AND o.state OPERATOR(pg_catalog.=) 'failed')"
	"                    AND (r.result IS NULL"
	"                         OR (r.result OPERATOR(pg_catalog.?) 'error_class'"
	"                             AND r.result OPERATOR(pg_catalog.?) 'failures'))"
	"              THEN (SELECT pg_catalog.jsonb_build_object('effects', "
	"COALESCE(pg_catalog.jsonb_agg("
	"                      pg_catalog.jsonb_build_object('effect_id', o.effect_id, 'effect_type', "
	"o.effect_type,"
	"                        'target', o.target, 'state', o.state, 'provider_id', o.provider_id)"
	"                      ORDER BY o.created_at, o.effect_type, o.target), "
	"'[]'::pg_catalog.jsonb))"
	"                    FROM idemgate.outbox o"
	"                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) "
	"r.idempotency_key/*@bucket o*/)"
	"              ELSE r.result END"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)/*@bucket r*//*@route $1*/"
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE"
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                   WHERE o.idempotency_key OPERATOR(pg_catalog.=) "
	"r.idempotency_key/*@bucket o*/"
	"                     AND o.state OPERATOR(pg_catalog.<>) ALL "
	"('{completed,cancelled,failed}'::pg_catalog.text[]))"
	" RETURNING r.idempotency_key, r.state, r.version, r.workflow",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

/*
 * complete_runs_stmt on one node, the statement the dispatcher runs for
 * every batch it completes: the new state and the result come from one
 * pass over the run's effects (one subquery, setting both columns),
 * where complete_runs_stmt asks three times (bench/dispatch/
 * instructions.sh: a tenth of the dispatcher's instructions per delivered
 * effect), and each effect's entry is jsonb_object of two text arrays, the
 * same value as complete_runs_stmt's jsonb_build_object at half the cost
 * (that one looks up the output function of each of its ten arguments on
 * every call). On Citus complete_runs_stmt stays, the form its router
 * planner was tested with (test/citus).
 */
static SavedStatement complete_runs_local_stmt = {
	"UPDATE idemgate.runs r"
	" SET (state, result) = ("
	"   SELECT CASE WHEN a.failed THEN 'failed_terminal' ELSE 'completed' END,"
	"          CASE WHEN NOT a.failed"
	"                    AND (r.result IS NULL"
	"                         OR (r.result OPERATOR(pg_catalog.?) 'error_class'"
	"                             AND r.result OPERATOR(pg_catalog.?) 'failures'))"
	"               THEN a.effects ELSE r.result END"
	"   FROM (SELECT COALESCE(pg_catalog.bool_or(o.state OPERATOR(pg_catalog.=) 'failed'),"
	"                         false) AS failed,"
	"                pg_catalog.jsonb_build_object('effects', COALESCE(pg_catalog.jsonb_agg("
	"                  pg_catalog.jsonb_object("
	"                    '{effect_id,effect_type,target,state,provider_id}'::pg_catalog.text[],"
	"                    ARRAY[o.effect_id::pg_catalog.text, o.effect_type, o.target, o.state,"
	"                          o.provider_id])"
	"                  ORDER BY o.created_at, o.effect_type, o.target), '[]'::pg_catalog.jsonb))"
	"                  AS effects"
	"         FROM idemgate.outbox o"
	"         WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key) a),"
	"     version = r.version OPERATOR(pg_catalog.+) 1,"
	"     updated_at = pg_catalog.now()"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE"
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                   WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key"
	"                     AND o.state OPERATOR(pg_catalog.<>) ALL"
	"                       ('{completed,cancelled,failed}'::pg_catalog.text[]))"
	" RETURNING r.idempotency_key, r.state, r.version, r.workflow",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

/*
 * The failed effects of a run that just ended failed_terminal, for its
 * state_changed event.
 */
static SavedStatement failed_effects_stmt = {
	"SELECT pg_catalog.jsonb_agg(o.effect_id ORDER BY o.created_at, o.effect_id)"
	" FROM idemgate.outbox o"
	" WHERE o.idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/"
	"   AND o.state OPERATOR(pg_catalog.=) 'failed'",
	1, {TEXTOID}
};

/*
 * The safety net (CompleteSettledRuns): approved runs in the order of
 * runs_open_idx (state, updated_at), after ($1, $2), each with whether all
 * its effects are settled. Open effects are looked up by a subquery per
 * run, a probe of the outbox's key index that stops at the first open
 * effect, never a join the planner could make a scan of the outbox.
 */
static SavedStatement approved_runs_stmt = {
	"SELECT r.idempotency_key, r.updated_at,"
	"       (SELECT o.effect_id FROM idemgate.outbox o"
	"         WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key/*@join o r*/"
	"           AND o.state OPERATOR(pg_catalog.<>) ALL "
	"('{completed,cancelled,failed}'::pg_catalog.text[])"
	"         LIMIT 1) IS NULL"
	" FROM idemgate.runs r"
	" WHERE r.state OPERATOR(pg_catalog.=) 'approved'"
	"   AND r.updated_at OPERATOR(pg_catalog.>=) $1"
	"   AND (r.updated_at OPERATOR(pg_catalog.>) $1 OR r.idempotency_key OPERATOR(pg_catalog.>) $2)"
	"/*@buckets r*/"
	" ORDER BY r.updated_at, r.idempotency_key LIMIT $3",
	3, {TIMESTAMPTZOID, TEXTOID, INT8OID}, GENERIC_PLAN
};

/* The settled ones among them, locked; a run another transaction holds is left. */
static SavedStatement lock_settled_stmt = {
	"SELECT r.idempotency_key FROM idemgate.runs r"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)/*@bucket r*//*@route $1*/"
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE"
	" ORDER BY r.idempotency_key FOR UPDATE OF r SKIP LOCKED",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

static int	EndedRuns(void);

/*
 * CompleteLockedRuns ends the runs of keys (a text[] datum), locked by
 * the caller while they were approved, whose effects are all settled
 * (see complete_runs_stmt): completed, or failed_terminal when one of them
 * failed for good (docs/outbox.md, "Completing a run"). A failed run gets
 * a state_changed event naming its failed effects, and the
 * terminal_failure alert fires for it at once. Returns how many runs
 * ended. Must be called inside SPI.
 */
int
CompleteLockedRuns(Datum keys)
{
	if (ExecSavedLatest(IdemgateIsDistributed() ? &complete_runs_stmt : &complete_runs_local_stmt,
						&keys, NULL, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not complete runs");
	return EndedRuns();
}

/* CompleteLockedRunsOnShard; see runs.h. */
int
CompleteLockedRunsOnShard(Datum keys, int bucket)
{
	int			rc = ExecSavedOnShard(&complete_runs_local_stmt, &keys, NULL, false, 0, true,
									  bucket);
	Datum	   *each;
	int			nkeys;
	int			n = 0;

	if (rc >= 0)
	{
		if (rc != SPI_OK_UPDATE_RETURNING)
			elog(ERROR, "could not complete runs");
		return EndedRuns();
	}
	/* Not placed here: a routed statement takes the keys of one bucket. */
	deconstruct_array(DatumGetArrayTypeP(keys), TEXTOID, -1, false, TYPALIGN_INT,
					  &each, NULL, &nkeys);
	for (int i = 0; i < nkeys; i++)
		n += CompleteLockedRuns(PointerGetDatum(construct_array(&each[i], 1, TEXTOID, -1, false,
																TYPALIGN_INT)));
	return n;
}

/*
 * EndedRuns follows the completion statement's result (key, state,
 * version, workflow of each run it ended): a failed_terminal run gets its
 * state_changed event. Returns how many ended.
 */
static int
EndedRuns(void)
{
	uint64		n;
	SPITupleTable *ended;

	n = SPI_processed;
	ended = SPI_tuptable;
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		text	   *key;
		Datum		d;
		EventDetails details;

		SPI_tuptable = ended;
		if (strcmp(TextDatumGetCString(GetResultDatum(i, 2, &isnull)), "failed_terminal") != 0)
			continue;
		key = DatumGetTextPCopy(GetResultDatum(i, 1, &isnull));
		DetailsInit(&details);
		AddStateChange(&details, "approved", "failed_terminal",
					   DatumGetInt64(GetResultDatum(i, 3, &isnull)), NULL);
		d = GetResultDatum(i, 4, &isnull);
		if (!isnull)
			DetailsText(&details, "workflow", TextDatumGetCString(d));
		DetailsText(&details, "reason", "an effect failed for good");
		d = PointerGetDatum(key);
		if (ExecSaved(&failed_effects_stmt, &d, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read failed effects");
		d = GetResultDatum(0, 1, &isnull);
		if (!isnull)
			DetailsJsonb(&details, "failed_effects", DatumGetJsonbPCopy(d));
		RecordEvent(key, NULL, "state_changed", NULL, DetailsFinish(&details));
	}
	return (int) n;
}

/*
 * CompleteRunsIfDone completes the runs of keys (a text[] datum, repeats
 * allowed) that are approved and have no effect in another state than
 * completed or cancelled; see lock_runs_stmt. Must be called inside SPI,
 * after the effect rows were changed.
 */
static void
CompleteRunsIfDone(Datum keys)
{
	Datum		values[2];

	values[0] = keys;
	if (ExecSaved(&lock_runs_stmt, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock runs");
	if (SPI_processed == 0)
		return;
	CompleteLockedRuns(ResultColumnArray(1, TEXTOID));
}

/*
 * CompleteRunIfDone completes the run of key (approved → completed) when
 * none of its effects is in another state than completed or cancelled. A
 * run without a result of its own (NULL, or an earlier attempt's failure
 * record) gets {"effects": [{effect_id, effect_type, target, state,
 * provider_id}, ...]}, so a later duplicate has an answer. Locks the run
 * row, so it must be called after the effect row was changed. Must be
 * called inside SPI.
 */
void
CompleteRunIfDone(text *key)
{
	Datum		k = PointerGetDatum(key);

	CompleteRunsIfDone(PointerGetDatum(construct_array(&k, 1, TEXTOID, -1, false, TYPALIGN_INT)));
}

/*
 * Where a walk over the approved runs stands (see CompleteSettledRuns):
 * after the run (at, key); DT_NOBEGIN is the start. One per session, and
 * on Citus one per shard (settled_walks, keyed by shard id).
 */
typedef struct SettledWalk
{
	int64		shardid;		/* hash key; 0 for the session's own walk */
	TimestampTz at;
	char		key[IDEMGATE_MAX_KEY_BYTES + 1];
} SettledWalk;

static SettledWalk session_walk = {0, DT_NOBEGIN, ""};
static HTAB *settled_walks = NULL;

/* ShardWalk is the walk over the approved runs of a shard, from the start at first. */
static SettledWalk *
ShardWalk(int64 shardid)
{
	SettledWalk *walk;
	bool		found;

	if (settled_walks == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(SettledWalk);
		settled_walks = hash_create("idemgate settled-run walks", 64, &ctl,
									HASH_ELEM | HASH_BLOBS);
	}
	walk = hash_search(settled_walks, &shardid, HASH_ENTER, &found);
	if (!found)
	{
		walk->at = DT_NOBEGIN;
		walk->key[0] = '\0';
	}
	return walk;
}

static int	CompleteSettledRunsIn(Datum buckets, int limit, SettledWalk *walk);

/*
 * CompleteSettledRuns is the safety net of run completion (docs/outbox.md,
 * "Completing a run"): it completes approved runs none of whose effects is
 * in another state than completed or cancelled, as their last effect
 * should have, and returns how many. Such a run is looked for, not
 * expected: every path that settles an effect completes its run. A
 * limit > 0 looks at that many approved runs (on Citus, per shard),
 * continuing where this session's previous call stopped and starting
 * again at the beginning after the last one (the dispatcher's call every
 * second, every 10 s on a Citus worker: bounded work, however many runs
 * wait for deliveries or people); limit 0 looks at all of them. Each
 * run is locked (SKIP LOCKED: one another transaction holds is looked at
 * again on the next pass) and checked again in a snapshot taken after the
 * lock, as CompleteLockedRuns does. Must be called inside SPI.
 */
int
CompleteSettledRuns(int limit)
{
	ListCell   *lc;
	int			n = 0;

	if (!IdemgateIsDistributed())
		n = CompleteSettledRunsIn((Datum) 0, limit, &session_walk);
	else
	{
		/*
		 * On Citus one shard at a time, each with its own walk: a worker's
		 * dispatcher looks at its own shards (their tables, with plans kept
		 * per shard: src/citus/local_shards.c), skipping those without an
		 * approved run; the coordinator, called by an operator, at all.
		 */
		List	   *sets = ShardBucketSets(SHARDS_SCAN);

		if (!AnyShardHasWork(sets, SHARD_APPROVED_RUNS))
			return 0;
		foreach(lc, sets)
		{
			ShardSet   *set = lfirst(lc);
			Datum		buckets = ShardBucketsWithWork(set, SHARD_APPROVED_RUNS);

			if (buckets != (Datum) 0)
				n += CompleteSettledRunsIn(buckets, limit, ShardWalk(set->shardid));
		}
	}
	if (n > 0)
		ereport(LOG,
				(errmsg("idemgate: completed %d approved %s whose effects were all settled",
						n, n == 1 ? "run" : "runs"),
				 errdetail("A run completes with its last effect; docs/outbox.md, "
						   "\"Completing a run\".")));
	return n;
}

/*
 * CompleteSettledRunsIn is CompleteSettledRuns on the shard whose buckets
 * are the int4[] buckets (everywhere when 0), walking from walk.
 */
static int
CompleteSettledRunsIn(Datum buckets, int limit, SettledWalk *walk)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	Datum	   *settled;
	int			nsettled = 0;
	uint64		rows;
	int			n;

	values[0] = TimestampTzGetDatum(limit > 0 ? walk->at : DT_NOBEGIN);
	values[1] = CStringGetTextDatum(limit > 0 ? walk->key : "");
	values[2] = Int64GetDatum((int64) limit);
	nulls[2] = limit > 0 ? ' ' : 'n';
	if (ExecSavedInBuckets(&approved_runs_stmt, values, nulls, false, 0, buckets) != SPI_OK_SELECT)
		elog(ERROR, "could not read approved runs");
	rows = SPI_processed;
	settled = palloc(sizeof(Datum) * (rows + 1));
	for (uint64 i = 0; i < rows; i++)
	{
		bool		isnull;

		if (DatumGetBool(GetResultDatum(i, 3, &isnull)))
			settled[nsettled++] = PointerGetDatum(DatumGetTextPCopy(GetResultDatum(i, 1, &isnull)));
	}
	if (limit > 0)
	{
		if (rows < (uint64) limit)
		{
			/* The end: the next call starts again at the beginning. */
			walk->at = DT_NOBEGIN;
			walk->key[0] = '\0';
		}
		else
		{
			bool		isnull;

			walk->at = DatumGetTimestampTz(GetResultDatum(rows - 1, 2, &isnull));
			text_to_cstring_buffer(DatumGetTextPP(GetResultDatum(rows - 1, 1, &isnull)),
								   walk->key, sizeof(walk->key));
		}
	}
	if (nsettled == 0)
		return 0;

	/* On Citus a statement takes the keys of one bucket: one run at a time. */
	if (IdemgateIsDistributed())
	{
		n = 0;
		for (int i = 0; i < nsettled; i++)
		{
			values[0] = PointerGetDatum(construct_array(&settled[i], 1, TEXTOID, -1, false,
														TYPALIGN_INT));
			if (ExecSaved(&lock_settled_stmt, values, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not lock approved runs");
			if (SPI_processed == 1)
				n += CompleteLockedRuns(values[0]);
		}
		return n;
	}
	values[0] = PointerGetDatum(construct_array(settled, nsettled, TEXTOID, -1, false,
												TYPALIGN_INT));
	if (ExecSaved(&lock_settled_stmt, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock approved runs");
	n = (int) SPI_processed;
	if (n == 0)
		return 0;
	settled = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		settled[i] = PointerGetDatum(DatumGetTextPCopy(GetResultDatum(i, 1, &isnull)));
	}
	return CompleteLockedRuns(PointerGetDatum(construct_array(settled, n, TEXTOID, -1, false,
															  TYPALIGN_INT)));
}

