/*-------------------------------------------------------------------------
 *
 * src/ledger/runs.c
 *	  The idempotency ledger: the runs table's one writer (the claim
 *	  statement, every transition, run completion) and claim_lease, the
 *	  seed's own statement. claim()'s entry points, in both forms, are
 *	  src/ledger/claim_calls.c; cas_transition, renew_lease, fail and
 *	  supersede src/ledger/run_calls.c.
 *
 * Design note. A run is owned by whoever holds (lease_owner, version) while
 * lease_expires_at is in the future. Ownership changes hands in exactly one
 * place, the claim statement: a single INSERT ... ON CONFLICT DO UPDATE that
 * either inserts a new key or takes over a failed_retryable run or an
 * expired processing lease with the same payload hash, bumping version.
 * Because the unique index serialises concurrent inserts of one key and the
 * conflicting row is locked before the WHERE is evaluated, ten concurrent
 * claims of one key give exactly one winner. Every other transition locks
 * the row (FOR UPDATE), re-checks ownership and the transition table, then
 * updates it; a stale owner sees version or lease mismatch and gets NULL,
 * never an error, so it can simply stop.
 *
 * Each state change writes an event in the same transaction, with one
 * exception: a first claim is recorded by the run row itself (created_at,
 * workflow, lease_owner), not by an event row. That extra insert cost ~8% of
 * claim throughput, and the row already says everything the event would;
 * the view idemgate.key_history shows both as one timeline. Terminal
 * failures also write a dead letter holding the full payload.
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
#include "citus/statements.h"
#include "core/sqlstates.h"
#include "ledger/tombstones.h"

PG_FUNCTION_INFO_V1(idemgate_claim_lease);

static const char *const run_states[] = {
	"processing", "awaiting_human", "approved",
	"completed", "failed_retryable", "failed_terminal", NULL
};

/*
 * The claim statement: insert, or take over a retryable or expired run with
 * the same payload. version is 0 exactly when the row was just inserted.
 * The time inside DO UPDATE comes from excluded.* (lease_started_at is
 * now()), never from a function call there. A takeover records the state
 * it took the run from (recovered_from: processing means an expired lease,
 * for the lease_takeovers alert); origin is the first claim's and stays.
 */
static SavedStatement claim_stmt = {
	"INSERT INTO idemgate.runs AS r (idempotency_key, workflow, state, payload_hash, payload,"
	"   lease_owner, lease_expires_at, lease_started_at, replaces_key, origin/*@bucket_col*/)"
	" VALUES ($1, $2, 'processing', $3, $4, $5, pg_catalog.now() + $6, pg_catalog.now(), $7, $8/*@bucket_val*/)"
	" ON CONFLICT (idempotency_key/*@bucket_col*/) DO UPDATE"
	" SET state = 'processing', lease_owner = excluded.lease_owner,"
	"     lease_expires_at = excluded.lease_expires_at,"
	"     lease_started_at = excluded.lease_started_at,"
	"     version = r.version + 1, updated_at = excluded.lease_started_at,"
	"     recovered_from = r.state"
	" WHERE r.payload_hash = excluded.payload_hash"
	"   AND (r.state = 'failed_retryable'"
	"        OR (r.state = 'processing' AND r.lease_expires_at < excluded.lease_started_at))"
	" RETURNING r.idempotency_key, r.state, r.lease_owner, r.version, r.result, r.workflow,"
	"   r.recovered_from /*@route $1*/",
	8, {TEXTOID, TEXTOID, BYTEAOID, JSONBOID, UUIDOID, INTERVALOID, TEXTOID, TEXTOID}
};

/*
 * The same on a schema older than 1.2 (this library installed, ALTER
 * EXTENSION UPDATE not run yet: README.md, "Upgrading"), which has neither
 * origin nor recovered_from: claims keep working, without them. $8 is
 * there to keep the parameters the same, and unused.
 */
static SavedStatement claim_stmt_11 = {
	"INSERT INTO idemgate.runs AS r (idempotency_key, workflow, state, payload_hash, payload,"
	"   lease_owner, lease_expires_at, lease_started_at, replaces_key)"
	" VALUES ($1, $2, 'processing', $3, $4, $5, pg_catalog.now() + $6, pg_catalog.now(), $7)"
	" ON CONFLICT (idempotency_key) DO UPDATE"
	" SET state = 'processing', lease_owner = excluded.lease_owner,"
	"     lease_expires_at = excluded.lease_expires_at,"
	"     lease_started_at = excluded.lease_started_at,"
	"     version = r.version + 1, updated_at = excluded.lease_started_at"
	" WHERE r.payload_hash = excluded.payload_hash"
	"   AND (r.state = 'failed_retryable'"
	"        OR (r.state = 'processing' AND r.lease_expires_at < excluded.lease_started_at))"
	" RETURNING r.idempotency_key, r.state, r.lease_owner, r.version, r.result, r.workflow,"
	"   NULL::text, $8::text",
	8, {TEXTOID, TEXTOID, BYTEAOID, JSONBOID, UUIDOID, INTERVALOID, TEXTOID, TEXTOID}
};

/*
 * ClaimStatement returns the claim statement for the schema installed:
 * claim_stmt once runs has recovered_from (1.2), claim_stmt_11 before.
 * Two catalog cache look-ups, on the statement path only (the direct path
 * knows the table's columns itself).
 */
static SavedStatement *
ClaimStatement(void)
{
	Oid			nsp = get_namespace_oid("idemgate", false);
	Oid			runs = get_relname_relid("runs", nsp);

	return OidIsValid(runs) && get_attnum(runs, "recovered_from") != InvalidAttrNumber ?
		&claim_stmt : &claim_stmt_11;
}

/* What a key that was not claimed looks like now. */
static SavedStatement existing_run_stmt = {
	"SELECT idempotency_key, state, version, result, payload_hash, workflow"
	" FROM idemgate.runs WHERE idempotency_key = $1/*@bucket*//*@route $1*/",
	1, {TEXTOID}
};

/* Lock a run, reading what its callers decide on; EXTRA: more columns. */
#define LOCK_RUN_SQL(EXTRA) \
	"SELECT state, version, failures, payload, workflow," \
	"       (lease_owner = $2 AND version = $3 AND lease_expires_at > pg_catalog.now()) AS owned" \
	EXTRA \
	" FROM idemgate.runs WHERE idempotency_key = $1/*@bucket*//*@route $1*/ FOR UPDATE"

static SavedStatement lock_run_stmt = {
	LOCK_RUN_SQL(""), 3, {TEXTOID, UUIDOID, INT8OID}
};
/* The same on a 1.3 schema, with whether its latest output was invalid. */
static SavedStatement lock_run_13_stmt = {
	LOCK_RUN_SQL(", output_invalid"), 3, {TEXTOID, UUIDOID, INT8OID}
};

static void AddStateChange(EventDetails *details, const char *from_state,
						   const char *to_state, int64 version, Jsonb *result);

/*
 * MoveRun's one statement: the run, if it is in $4 (and at version $3 and
 * held by $2 with a live lease, when those are given), moves to $5. It
 * also returns the run's workflow and, in milliseconds, how long the
 * current attempt has been processing: since the claim that started it
 * (lease_started_at, which the claim writes anyway), the figure a lease
 * is sized from (docs/operations.md, "Run processing times").
 */
/* MoveRun's statement; EXTRA: a further condition. */
#define MOVE_RUN_SQL(EXTRA) \
	"UPDATE idemgate.runs SET state = $5, version = version OPERATOR(pg_catalog.+) 1," \
	"  result = COALESCE($6, result), failures = failures OPERATOR(pg_catalog.+) $7," \
	"  updated_at = pg_catalog.now()" \
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ AND state OPERATOR(pg_catalog.=) $4" \
	"   AND ($3::pg_catalog.int8 IS NULL OR version OPERATOR(pg_catalog.=) $3)" \
	"   AND ($2::pg_catalog.uuid IS NULL" \
	"        OR (lease_owner OPERATOR(pg_catalog.=) $2" \
	"            AND lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.now()))" \
	EXTRA \
	" RETURNING version, workflow," \
	"   pg_catalog.round(pg_catalog.date_part('epoch'," \
	"     updated_at OPERATOR(pg_catalog.-) lease_started_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8"

static SavedStatement move_stmt = {
	MOVE_RUN_SQL(""),
	7, {TEXTOID, UUIDOID, INT8OID, TEXTOID, TEXTOID, JSONBOID, INT4OID}
};

/*
 * move_stmt for a run leaving processing towards its effects (approved,
 * awaiting_human) on a 1.3 schema: not while its latest output is invalid.
 */
static SavedStatement move_valid_stmt = {
	MOVE_RUN_SQL("   AND NOT output_invalid"),
	7, {TEXTOID, UUIDOID, INT8OID, TEXTOID, TEXTOID, JSONBOID, INT4OID}
};

static SavedStatement renew_stmt = {
	"UPDATE idemgate.runs"
	" SET lease_expires_at = GREATEST(lease_expires_at, pg_catalog.now() + $4),"
	"     updated_at = pg_catalog.now()"
	" WHERE idempotency_key = $1/*@bucket*//*@route $1*/ AND lease_owner = $2 AND version = $3"
	"   AND state = 'processing' AND lease_expires_at > pg_catalog.now()"
	"   AND GREATEST(lease_expires_at, pg_catalog.now() + $4) - lease_started_at <= $5"
	" RETURNING lease_expires_at",
	5, {TEXTOID, UUIDOID, INT8OID, INTERVALOID, INTERVALOID}
};

/*
 * supersede locks the original FOR NO KEY UPDATE: two supersedes of one
 * original serialise, so the second sees the first's superseded event
 * (superseded_by_stmt, in a snapshot taken after the lock).
 */
static SavedStatement lock_original_stmt = {
	"SELECT state, workflow FROM idemgate.runs WHERE idempotency_key = $1/*@bucket*//*@route $1*/ FOR NO KEY UPDATE",
	1, {TEXTOID}
};

static SavedStatement superseded_by_stmt = {
	"SELECT e.details OPERATOR(pg_catalog.->>) 'new_key' FROM idemgate.events e"
	" WHERE e.idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket e*//*@route $1*/"
	"   AND e.kind OPERATOR(pg_catalog.=) 'superseded'"
	" ORDER BY e.id LIMIT 1",
	1, {TEXTOID}
};

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
	"                               WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key/*@bucket o*/"
	"                                 AND o.state OPERATOR(pg_catalog.=) 'failed')"
	"                  THEN 'failed_terminal' ELSE 'completed' END,"
	"     version = r.version OPERATOR(pg_catalog.+) 1,"
	"     updated_at = pg_catalog.now(),"
	"     result = CASE WHEN NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key/*@bucket o*/"
	"                                      AND o.state OPERATOR(pg_catalog.=) 'failed')"
	"                    AND (r.result IS NULL"
	"                         OR (r.result OPERATOR(pg_catalog.?) 'error_class'"
	"                             AND r.result OPERATOR(pg_catalog.?) 'failures'))"
	"              THEN (SELECT pg_catalog.jsonb_build_object('effects', COALESCE(pg_catalog.jsonb_agg("
	"                      pg_catalog.jsonb_build_object('effect_id', o.effect_id, 'effect_type', o.effect_type,"
	"                        'target', o.target, 'state', o.state, 'provider_id', o.provider_id)"
	"                      ORDER BY o.created_at, o.effect_type, o.target), '[]'::pg_catalog.jsonb))"
	"                    FROM idemgate.outbox o"
	"                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key/*@bucket o*/)"
	"              ELSE r.result END"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)/*@bucket r*//*@route $1*/"
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE"
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                   WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key/*@bucket o*/"
	"                     AND o.state OPERATOR(pg_catalog.<>) ALL ('{completed,cancelled,failed}'::pg_catalog.text[]))"
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
	"           AND o.state OPERATOR(pg_catalog.<>) ALL ('{completed,cancelled,failed}'::pg_catalog.text[])"
	"         LIMIT 1) IS NULL"
	" FROM idemgate.runs r"
	" WHERE r.state OPERATOR(pg_catalog.=) 'approved'"
	"   AND r.updated_at OPERATOR(pg_catalog.>=) $1"
	"   AND (r.updated_at OPERATOR(pg_catalog.>) $1 OR r.idempotency_key OPERATOR(pg_catalog.>) $2)"
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

static SavedStatement reset_failures_stmt = {
	"UPDATE idemgate.runs SET failures = 0 WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {TEXTOID}
};

/* record_validation counts its attempts on the run. */
static SavedStatement count_validation_stmt = {
	"UPDATE idemgate.runs SET validations = validations + 1"
	" WHERE idempotency_key = $1/*@bucket*//*@route $1*/ RETURNING validations",
	1, {TEXTOID}
};

/* record_validation's verdict on a 1.3 schema: the latest, and how many were invalid. */
static SavedStatement verdict_stmt = {
	"UPDATE idemgate.runs SET validations = validations OPERATOR(pg_catalog.+) 1,"
	"  output_invalid = NOT $2,"
	"  invalid_outputs = invalid_outputs OPERATOR(pg_catalog.+) CASE WHEN $2 THEN 0 ELSE 1 END"
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/"
	" RETURNING validations, invalid_outputs",
	2, {TEXTOID, BOOLOID}
};

/* Reinjecting a run's dead letter (1.3): a fresh start for its output too. */
static SavedStatement reset_failures_13_stmt = {
	"UPDATE idemgate.runs SET failures = 0, output_invalid = false, invalid_outputs = 0"
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {TEXTOID}
};


/* IsRunState tells whether state names a run state. */
bool
IsRunState(const char *state)
{
	for (int i = 0; run_states[i] != NULL; i++)
		if (strcmp(state, run_states[i]) == 0)
			return true;
	return false;
}

/*
 * CasAllowed tells whether cas_transition may move a run from one state to
 * another. The transitions into awaiting_human and approved belong to
 * request_approval, enqueue_effect and consume_approval, and approved →
 * completed to the outbox, so they are refused here.
 */
bool
CasAllowed(const char *from, const char *to)
{
	if (strcmp(from, "processing") == 0)
		return strcmp(to, "completed") == 0 ||
			strcmp(to, "failed_retryable") == 0 ||
			strcmp(to, "failed_terminal") == 0;
	if (strcmp(from, "awaiting_human") == 0 || strcmp(from, "approved") == 0)
		return strcmp(to, "failed_terminal") == 0;
	return false;
}

/* ReportIllegalTransition raises IG002 for from → to. */
void
ReportIllegalTransition(const char *key, const char *from, const char *to)
{
	ereport(ERROR,
			(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
			 errmsg("illegal transition of run \"%s\" from %s to %s", key, from, to),
			 strcmp(from, "completed") == 0 || strcmp(from, "failed_terminal") == 0 ?
			 errhint("A finished run never changes; use idemgate.supersede() with a new key to redo the work.") :
			 strcmp(to, "awaiting_human") == 0 ?
			 errhint("Use idemgate.request_approval() to wait for a human.") :
			 strcmp(to, "approved") == 0 ?
			 errhint("Use idemgate.enqueue_effect() or idemgate.consume_approval().") : 0));
}

/*
 * LockOwnedRun locks the run row and reports whether (owner, version) still
 * holds a live lease on it. Must be called inside SPI.
 */
void
LockOwnedRun(text *key, pg_uuid_t *owner, int64 version, OwnedRun *run)
{
	Datum		values[3];
	bool		isnull;
	Datum		d;

	values[0] = PointerGetDatum(key);
	values[1] = UUIDPGetDatum(owner);
	values[2] = Int64GetDatum(version);
	memset(run, 0, sizeof(*run));
	if (ExecSaved(RunValidationTracked() ? &lock_run_13_stmt : &lock_run_stmt,
				  values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock run");
	if (SPI_processed == 0)
		return;
	run->found = true;
	strlcpy(run->state, TextDatumGetCString(GetResultDatum(0, 1, &isnull)), sizeof(run->state));
	run->version = DatumGetInt64(GetResultDatum(0, 2, &isnull));
	run->failures = DatumGetInt32(GetResultDatum(0, 3, &isnull));
	d = GetResultDatum(0, 4, &isnull);
	run->payload = isnull ? NULL : DatumGetJsonbP(d);
	d = GetResultDatum(0, 5, &isnull);
	run->workflow = isnull ? NULL : TextDatumGetCString(d);
	d = GetResultDatum(0, 6, &isnull);
	run->owned = !isnull && DatumGetBool(d);
	if (SPI_tuptable->tupdesc->natts >= 7)
	{
		d = GetResultDatum(0, 7, &isnull);
		run->output_invalid = !isnull && DatumGetBool(d);
	}
}

/*
 * RunValidationTracked tells whether the schema records the verdict of a
 * run's latest validation (runs.output_invalid, 1.3): only then is an
 * invalid output refused (docs/operations.md, "Validating model output").
 */
bool
RunValidationTracked(void)
{
	Oid			runs = IdemgateRelid("runs");

	return OidIsValid(runs) && get_attnum(runs, "output_invalid") != InvalidAttrNumber;
}

/* LeavesForEffects: a move that lets the run's effects happen. */
static bool
LeavesForEffects(const char *from_state, const char *to_state)
{
	return strcmp(from_state, "processing") == 0 &&
		(strcmp(to_state, "approved") == 0 || strcmp(to_state, "awaiting_human") == 0);
}

/*
 * MoveRun moves the run of key from from_state to to_state, bumps its
 * version, stores result when given and counts a failure when asked, if it
 * is in from_state and, when given, at *version and held by owner with a
 * live lease. The change is added to details (AddStateChange) and the new
 * version returned; -1, with nothing changed, when the run did not qualify.
 * A concurrent change of the row is re-checked against the whole WHERE
 * (READ COMMITTED), as a FOR UPDATE followed by the test would.
 */
static int64
MoveRun(text *key, pg_uuid_t *owner, const int64 *version, const char *from_state,
		const char *to_state, Jsonb *result, bool count_failure, EventDetails *details)
{
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int64		new_version;

	/* The rule the runs_state_check constraint used to enforce (1.0). */
	if (!IsRunState(to_state))
		elog(ERROR, "idemgate: \"%s\" is not a run state", to_state);
	values[0] = PointerGetDatum(key);
	values[1] = UUIDPGetDatum(owner);
	nulls[1] = owner ? ' ' : 'n';
	values[2] = Int64GetDatum(version ? *version : 0);
	nulls[2] = version ? ' ' : 'n';
	values[3] = CStringGetTextDatum(from_state);
	values[4] = CStringGetTextDatum(to_state);
	values[5] = JsonbPGetDatum(result);
	nulls[5] = result ? ' ' : 'n';
	values[6] = Int32GetDatum(count_failure ? 1 : 0);
	if (ExecSaved(LeavesForEffects(from_state, to_state) && RunValidationTracked() ?
				  &move_valid_stmt : &move_stmt,
				  values, nulls, false, 1) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update run state");
	if (SPI_processed != 1)
		return -1;
	new_version = DatumGetInt64(GetResultDatum(0, 1, &isnull));
	AddStateChange(details, from_state, to_state, new_version, result);
	if (strcmp(from_state, "processing") == 0)
	{
		/* The attempt ends here: its workflow and duration (run_metrics). */
		Datum		workflow = GetResultDatum(0, 2, &isnull);
		Datum		ms;

		if (!isnull)
			DetailsText(details, "workflow", TextDatumGetCString(workflow));
		ms = GetResultDatum(0, 3, &isnull);
		if (!isnull)
			DetailsInt(details, "processing_ms", DatumGetInt64(ms));
	}
	return new_version;
}

/*
 * MoveRunState moves a run this transaction holds locked, in from_state,
 * to to_state (see MoveRun): the caller records details in the one event
 * of its action, so each state change is one event row. Returns the new
 * version.
 */
int64
MoveRunState(text *key, const char *from_state, const char *to_state,
			 Jsonb *result, bool count_failure, EventDetails *details)
{
	int64		version = MoveRun(key, NULL, NULL, from_state, to_state, result,
								  count_failure, details);

	if (version < 0)
		elog(ERROR, "could not update run state");
	return version;
}

/*
 * TryMoveRun is the lock, the test and MoveRunState in one statement, for
 * the usual case: key at version and in from_state (and, when owner is
 * given, held by owner with a live lease) moves to to_state. Returns the
 * new version, or -1 with nothing changed: the caller then tells the other
 * cases apart (LockOwnedRun).
 */
int64
TryMoveRun(text *key, pg_uuid_t *owner, int64 version, const char *from_state,
		   const char *to_state, Jsonb *result, EventDetails *details)
{
	return MoveRun(key, owner, &version, from_state, to_state, result, false, details);
}

/*
 * AddStateChange adds a state change to an event's details: from, to, the
 * new version, and the caller's model identity when the result names one.
 */
static void
AddStateChange(EventDetails *details, const char *from_state, const char *to_state,
			   int64 version, Jsonb *result)
{
	DetailsText(details, "from", from_state);
	DetailsText(details, "to", to_state);
	DetailsInt(details, "version", version);
	if (result != NULL)
	{
		/* Only the identity fields of a result are audited, never its body. */
		static const char *const audited[] = {"model", "model_version", "workflow_version", NULL};

		for (int i = 0; audited[i] != NULL; i++)
		{
			JsonbValue *v = getKeyJsonValueFromContainer(&result->root, audited[i],
														 strlen(audited[i]), NULL);

			if (v != NULL && v->type == jbvString)
				DetailsText(details, audited[i],
							pnstrdup(v->val.string.val, v->val.string.len));
		}
	}
}

/*
 * SetRunState is MoveRunState for a change that is the whole action
 * (cas_transition, fail, reinject): it writes a state_changed event, with
 * extra_details under "info". Returns the new version.
 */
int64
SetRunState(text *key, const char *from_state, const char *to_state,
			Jsonb *result, bool count_failure, const char *actor,
			Jsonb *extra_details)
{
	EventDetails details;
	int64		version;

	DetailsInit(&details);
	version = MoveRunState(key, from_state, to_state, result, count_failure, &details);
	DetailsJsonb(&details, "info", extra_details);
	RecordEvent(key, NULL, "state_changed", actor, DetailsFinish(&details));
	return version;
}

/*
 * RecordTakeover writes the recovered event of a claim that took a run
 * over (a first claim is recorded by the run row itself): the state it was
 * taken from (processing: its lease had expired; failed_retryable: a
 * redelivery), the claim's origin when given, the payload hash (the
 * run's, which the claim matched), the new owner and version. Reads the
 * claim statement's RETURNING row (columns 3, 4, 6, 7).
 */
static void
RecordTakeover(text *key, bytea *hash, text *origin, const char *actor)
{
	EventDetails details;
	bool		isnull;
	Datum		d;

	DetailsInit(&details);
	d = GetResultDatum(0, 6, &isnull);
	if (!isnull)
		DetailsText(&details, "workflow", TextDatumGetCString(d));
	DetailsInt(&details, "version", DatumGetInt64(GetResultDatum(0, 4, &isnull)));
	DetailsText(&details, "lease_owner",
				DatumGetCString(DirectFunctionCall1(uuid_out, GetResultDatum(0, 3, &isnull))));
	d = GetResultDatum(0, 7, &isnull);
	if (!isnull)
		DetailsText(&details, "from", TextDatumGetCString(d));
	if (origin != NULL)
		DetailsText(&details, "origin", text_to_cstring(origin));
	/* Keyed, never the bare hash: readers see events (src/ledger/payload_hmac.c). */
	DetailsText(&details, "payload_hmac", PayloadHmacHex(hash));
	RecordEvent(key, NULL, "recovered", actor, DetailsFinish(&details));
}

/*
 * ReportPayloadMismatch raises IG001 for key, after counting it for the
 * payload_mismatch alert under the run's workflow (else the claim's): the
 * error rolls the transaction back, the count in shared memory stays
 * (src/ledger/payload_mismatches.c).
 */
static void
ReportPayloadMismatch(text *key, Datum workflow, bool workflow_null, text *claim_workflow)
{
	text	   *wf = workflow_null ? claim_workflow : DatumGetTextPP(workflow);

	CountPayloadMismatch(wf ? VARDATA_ANY(wf) : NULL, wf ? VARSIZE_ANY_EXHDR(wf) : 0,
						 VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	ereport(ERROR,
			(errcode(ERRCODE_IDEMGATE_PAYLOAD_MISMATCH),
			 errmsg("idempotency key \"%s\" was already used with a different payload",
					text_to_cstring(key)),
			 errdetail("The payload hash differs from the one stored when the key was first claimed."),
			 errhint("Stop and investigate: a changed business input under the same key hides upstream corruption. Use idemgate.supersede() for an intended correction.")));
}

/*
 * ClaimDuplicate makes the duplicate outcome of a key that was not claimed
 * (its state, version and result; never its owner) and records the
 * duplicate event. Must be called inside SPI.
 */
static void
ClaimDuplicate(text *key, const char *actor, Datum state, int64 version,
			   Datum result, bool result_null, Datum workflow, bool workflow_null,
			   text *origin, ClaimResult *out)
{
	out->outcome = "duplicate";
	out->values[1] = PointerGetDatum(key);
	out->nulls[1] = false;
	out->values[2] = state;
	out->nulls[2] = false;
	out->nulls[3] = true;		/* lease_owner is never shown to a duplicate */
	out->values[3] = (Datum) 0;
	out->values[4] = Int64GetDatum(version);
	out->nulls[4] = false;
	out->values[5] = result;
	out->nulls[5] = result_null;

	/* Without SQL where it can (src/ledger/claim_direct.c). */
	if (RecordDuplicate(key, actor, workflow, workflow_null, state, version, origin))
		return;
	RecordDuplicateEvent(key, actor, workflow, workflow_null, state, version, origin);
}

/*
 * ClaimExisting makes the outcome of a claim of the key of the run that
 * existing_run_stmt just read, which the claim did not take: IG001 for a
 * different payload hash (or, for claim_in_bucket, the outcome
 * payload_mismatch with the workflow to count it under), else a
 * duplicate.
 */
static void
ClaimExisting(text *key, bytea *hash, text *workflow, const char *actor,
			  text *origin, ClaimResult *out)
{
	bool		isnull;
	bool		result_null;
	bool		workflow_null;
	bytea	   *existing_hash = DatumGetByteaPP(GetResultDatum(0, 5, &isnull));
	Datum		existing_workflow = GetResultDatum(0, 6, &workflow_null);
	Datum		result;

	if (VARSIZE_ANY_EXHDR(existing_hash) != VARSIZE_ANY_EXHDR(hash) ||
		memcmp(VARDATA_ANY(existing_hash), VARDATA_ANY(hash), VARSIZE_ANY_EXHDR(hash)) != 0)
	{
		if (!out->mismatch_is_outcome)
			ReportPayloadMismatch(key, existing_workflow, workflow_null, workflow);
		/* Nothing was written: the caller raises IG001 (claim_in_bucket). */
		out->outcome = "payload_mismatch";
		out->values[6] = workflow_null ? PointerGetDatum(workflow) : existing_workflow;
		out->nulls[6] = workflow_null && workflow == NULL;
		return;
	}
	result = GetResultDatum(0, 4, &result_null);
	ClaimDuplicate(key, actor, GetResultDatum(0, 2, &isnull),
				   DatumGetInt64(GetResultDatum(0, 3, &isnull)),
				   result, result_null, existing_workflow, workflow_null, origin, out);
}

/*
 * ClaimTombstoned makes the outcome of a claim of a key purge left a
 * tombstone of (src/ledger/tombstones.c): IG001 for another payload (or the
 * outcome payload_mismatch for claim_in_bucket), else duplicate with
 * state purged. Nothing is written: no run holds the key any more.
 */
static void
ClaimTombstoned(text *key, bytea *hash, text *workflow, const Tombstone *t,
				ClaimResult *out)
{
	if (!TombstoneMatches(t, hash))
	{
		if (!out->mismatch_is_outcome)
			ReportPayloadMismatch(key, (Datum) 0, true, workflow);
		out->outcome = "payload_mismatch";
		out->values[6] = PointerGetDatum(workflow);
		out->nulls[6] = workflow == NULL;
		return;
	}
	out->outcome = "duplicate";
	out->values[1] = PointerGetDatum(key);
	out->nulls[1] = false;
	out->values[2] = CStringGetTextDatum("purged");
	out->nulls[2] = false;
	for (int i = 3; i < 6; i++)
		out->nulls[i] = true;
}

/* claim_in_bucket, which Citus delegates to the node of its bucket. */
static SavedStatement claim_in_bucket_stmt = {
	"SELECT outcome, idempotency_key, state, lease_owner, version, result, mismatch_workflow"
	" FROM idemgate.claim_in_bucket($1, $2, $3, $4, $5, $6, $7)",
	7, {INT4OID, TEXTOID, JSONBOID, INTERVALOID, TEXTOID, UUIDOID, TEXTOID}
};

/*
 * ClaimInBucket is a claim that is its whole transaction on Citus
 * (idemgate--1.1--1.2.sql, part 66_claim_in_bucket): one call of claim_in_bucket,
 * which Citus sends to the node of the key's shard and which commits
 * there (src/citus/shard_autocommit.c). IG001 is raised here, and counted in
 * this node's payload_mismatch alert.
 */
void
ClaimInBucket(text *key, Jsonb *payload, Interval *lease, text *workflow,
			  pg_uuid_t *owner, text *origin, ClaimResult *out)
{
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			nestlevel;
	int			rc;
	bool		isnull;

	values[0] = Int32GetDatum(KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
	values[1] = PointerGetDatum(key);
	values[2] = JsonbPGetDatum(payload);
	values[3] = IntervalPGetDatum(lease);
	values[4] = PointerGetDatum(workflow);
	nulls[4] = workflow ? ' ' : 'n';
	values[5] = UUIDPGetDatum(owner);
	nulls[5] = owner ? ' ' : 'n';
	values[6] = PointerGetDatum(origin);
	nulls[6] = origin ? ' ' : 'n';

	nestlevel = BeginShardAutocommit();
	rc = ExecSaved(&claim_in_bucket_stmt, values, nulls, false, 0);
	EndShardAutocommit(nestlevel);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "claim_in_bucket failed");
	out->outcome = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	if (strcmp(out->outcome, "payload_mismatch") == 0)
	{
		bool		workflow_null;
		Datum		existing_workflow = GetResultDatum(0, 7, &workflow_null);

		ReportPayloadMismatch(key, existing_workflow, workflow_null, workflow);
	}
	for (int i = 1; i < 6; i++)
		out->values[i] = GetResultDatum(0, i + 1, &out->nulls[i]);
}

/*
 * ClaimRun is the one atomic claim used by claim, claim(jsonb) and
 * supersede. A new key, or a key that is held and cannot be taken over, is
 * done without SQL (src/ledger/claim_direct.c); otherwise the claim statement
 * runs, and on a key it did not claim the existing run is looked up: a
 * different payload hash is IG001, otherwise the outcome is duplicate.
 * Must be called inside SPI; result datums live in the SPI context.
 */
void
ClaimRun(text *key, Jsonb *payload, Interval *lease, text *workflow,
		 pg_uuid_t *owner, text *replaces_key, const char *actor,
		 text *origin, ClaimResult *out)
{
	bytea	   *hash = HashJsonbPayload(payload);
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Datum		lookup[1];
	NewRun		run = {key, workflow, hash, payload, owner ? owner : RandomUuid(),
	lease, replaces_key, origin};
	ExistingRun existing;

	switch (ClaimDirect(&run, &existing))
	{
		case CLAIM_INSERTED:
			out->outcome = "claimed";
			out->values[1] = PointerGetDatum(key);
			out->nulls[1] = false;
			out->values[2] = CStringGetTextDatum("processing");
			out->nulls[2] = false;
			out->values[3] = UUIDPGetDatum(run.owner);
			out->nulls[3] = false;
			out->values[4] = Int64GetDatum(0);
			out->nulls[4] = false;
			out->values[5] = (Datum) 0;
			out->nulls[5] = true;
			return;
		case CLAIM_EXISTS:
			if (!existing.same_payload)
				ReportPayloadMismatch(key, existing.workflow, existing.workflow_null, workflow);
			ClaimDuplicate(key, actor, existing.state, existing.version,
						   existing.result, existing.result_null,
						   existing.workflow, existing.workflow_null, origin, out);
			return;
		case CLAIM_TOMBSTONED:
			ClaimTombstoned(key, hash, workflow, &existing.tombstone, out);
			return;
		case CLAIM_USE_STATEMENT:
			break;
	}
	if (FindTombstone(key, &existing.tombstone))
	{
		ClaimTombstoned(key, hash, workflow, &existing.tombstone, out);
		return;
	}

	values[0] = PointerGetDatum(key);
	values[1] = PointerGetDatum(workflow);
	nulls[1] = workflow ? ' ' : 'n';
	values[2] = PointerGetDatum(hash);
	values[3] = JsonbPGetDatum(payload);
	values[4] = UUIDPGetDatum(run.owner);
	values[5] = IntervalPGetDatum(lease);
	values[6] = PointerGetDatum(replaces_key);
	nulls[6] = replaces_key ? ' ' : 'n';
	values[7] = PointerGetDatum(origin);
	nulls[7] = origin ? ' ' : 'n';
	lookup[0] = PointerGetDatum(key);

	/*
	 * Between a conflict and the look-up, the row can only disappear through
	 * purge; then the next round inserts it again.
	 */
	for (int round = 0; round < 3; round++)
	{
		bool		isnull;

		if (ExecSaved(ClaimStatement(), values, nulls, false, 0) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "claim statement failed");
		if (SPI_processed == 1)
		{
			int64		version = DatumGetInt64(GetResultDatum(0, 4, &isnull));

			out->outcome = version == 0 ? "claimed" : "recovered";
			for (int i = 0; i < 5; i++)
				out->values[i + 1] = GetResultDatum(0, i + 1, &out->nulls[i + 1]);
			/*
			 * Purged and tombstoned while the statement waited for purge (the
			 * look-up may run a statement: the row above is read first).
			 */
			if (version == 0 && FindTombstone(key, &existing.tombstone))
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not claim key \"%s\": it was purged concurrently", text_to_cstring(key)),
						 errhint("Retry the call: it answers duplicate with state purged.")));
			if (version > 0)
				RecordTakeover(key, hash, origin, actor);
			return;
		}

		if (ExecSaved(&existing_run_stmt, lookup, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "run look-up failed");
		if (SPI_processed == 0)
			continue;

		ClaimExisting(key, hash, workflow, actor, origin, out);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not claim key \"%s\": it was removed concurrently", text_to_cstring(key)),
			 errhint("Retry the call.")));
}

/* LeaseArg returns a lease interval argument: positive, within max_lease_life. */
Interval *
LeaseArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	return IntervalArg(fcinfo, argno, name, 0,
					   (int64) IdemgateMaxLeaseLifeSecs * USECS_PER_SEC,
					   "Leases are capped by idemgate.max_lease_life.");
}

/* EmitClaimResult puts a claim outcome into the function's result set. */
void
EmitClaimResult(FunctionCallInfo fcinfo, ClaimResult *res)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	res->values[0] = CStringGetTextDatum(res->outcome);
	res->nulls[0] = false;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, res->values, res->nulls);
}












/*
 * idemgate_claim_lease implements claim_lease(key, payload_hash, owner,
 * lease): the seed's single statement. One row when claimed or recovered,
 * none otherwise; it never raises for a busy or finished key.
 */
Datum
idemgate_claim_lease(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	bytea	   *hash;
	pg_uuid_t  *owner;
	Interval   *lease;
	Datum		values[8];
	char		nulls[8] = {' ', 'n', ' ', 'n', ' ', ' ', 'n', 'n'};
	ReturnSetInfo *rsinfo;

	RequireArg(fcinfo, 1, "payload_hash");
	hash = PG_GETARG_BYTEA_PP(1);
	if (VARSIZE_ANY_EXHDR(hash) != IDEMGATE_SHA256_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"payload_hash\" must be a 32-byte SHA-256 digest, not %d bytes",
						(int) VARSIZE_ANY_EXHDR(hash)),
				 errhint("Compute it with idemgate.hash_payload(payload).")));
	RequireArg(fcinfo, 2, "owner");
	owner = PG_GETARG_UUID_P(2);
	lease = LeaseArg(fcinfo, 3, "lease");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	values[0] = PointerGetDatum(key);
	values[1] = values[3] = values[6] = values[7] = (Datum) 0;
	values[2] = PointerGetDatum(hash);
	values[4] = UUIDPGetDatum(owner);
	values[5] = IntervalPGetDatum(lease);
	if (ExecSaved(ClaimStatement(), values, nulls, false, 0) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "claim statement failed");
	if (SPI_processed == 1)
	{
		Datum		row[3];
		bool		rownulls[3];

		row[0] = GetResultDatum(0, 1, &rownulls[0]);
		row[1] = GetResultDatum(0, 3, &rownulls[1]);
		row[2] = GetResultDatum(0, 4, &rownulls[2]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
		if (DatumGetInt64(row[2]) > 0)
			RecordTakeover(key, hash, NULL, NULL);
	}
	SPI_finish();
	return (Datum) 0;
}







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
	uint64		n;
	SPITupleTable *ended;

	if (ExecSavedLatest(&complete_runs_stmt, &keys, NULL, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not complete runs");
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
 * Where this session's walk over the approved runs stands (see
 * CompleteSettledRuns): after the run (settled_after_at,
 * settled_after_key); DT_NOBEGIN is the start.
 */
static TimestampTz settled_after_at = DT_NOBEGIN;
static char settled_after_key[IDEMGATE_MAX_KEY_BYTES + 1] = "";

/*
 * CompleteSettledRuns is the safety net of run completion (docs/outbox.md,
 * "Completing a run"): it completes approved runs none of whose effects is
 * in another state than completed or cancelled, as their last effect
 * should have, and returns how many. Such a run is looked for, not
 * expected: every path that settles an effect completes its run. A
 * limit > 0 looks at that many approved runs, continuing where this
 * session's previous call stopped and starting again at the beginning
 * after the last one (the dispatcher's call every second: bounded work,
 * however many runs wait for deliveries or people); limit 0 looks at all
 * of them. Each run is locked (SKIP LOCKED: one another transaction holds
 * is looked at again on the next pass) and checked again in a snapshot
 * taken after the lock, as CompleteLockedRuns does. Must be called inside
 * SPI.
 */
int
CompleteSettledRuns(int limit)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	Datum	   *settled;
	int			nsettled = 0;
	uint64		rows;
	int			n;

	values[0] = TimestampTzGetDatum(limit > 0 ? settled_after_at : DT_NOBEGIN);
	values[1] = CStringGetTextDatum(limit > 0 ? settled_after_key : "");
	values[2] = Int64GetDatum((int64) limit);
	nulls[2] = limit > 0 ? ' ' : 'n';
	if (ExecSaved(&approved_runs_stmt, values, nulls, false, 0) != SPI_OK_SELECT)
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
			settled_after_at = DT_NOBEGIN;
			settled_after_key[0] = '\0';
		}
		else
		{
			bool		isnull;

			settled_after_at = DatumGetTimestampTz(GetResultDatum(rows - 1, 2, &isnull));
			text_to_cstring_buffer(DatumGetTextPP(GetResultDatum(rows - 1, 1, &isnull)),
								   settled_after_key, sizeof(settled_after_key));
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
	n = CompleteLockedRuns(PointerGetDatum(construct_array(settled, n, TEXTOID, -1, false,
														   TYPALIGN_INT)));
	if (n > 0)
		ereport(LOG,
				(errmsg("idemgate: completed %d approved %s whose effects were all settled",
						n, n == 1 ? "run" : "runs"),
				 errdetail("A run completes with its last effect; docs/outbox.md, \"Completing a run\".")));
	return n;
}


/* ResetRunFailures sets a locked run's failure count back to 0 (reinject). */
void
ResetRunFailures(text *key)
{
	Datum		value = PointerGetDatum(key);

	if (ExecSaved(RunValidationTracked() ? &reset_failures_13_stmt : &reset_failures_stmt,
				  &value, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not reset run failures");
}

/*
 * CountValidation adds one to a locked run's validation count and returns
 * the new count (record_validation's attempt).
 */
int32
CountValidation(text *key)
{
	Datum		value = PointerGetDatum(key);
	bool		isnull;

	if (ExecSaved(&count_validation_stmt, &value, NULL, false, 1) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not count validation");
	return DatumGetInt32(GetResultDatum(0, 1, &isnull));
}

/*
 * RecordValidationVerdict counts a locked run's validation with its
 * verdict (1.3) and returns the attempt; *invalid_outputs is how many of
 * its validations were invalid. Must be called inside SPI.
 */
int32
RecordValidationVerdict(text *key, bool valid, int32 *invalid_outputs)
{
	Datum		values[2];
	bool		isnull;

	values[0] = PointerGetDatum(key);
	values[1] = BoolGetDatum(valid);
	if (ExecSaved(&verdict_stmt, values, NULL, false, 1) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record validation");
	*invalid_outputs = DatumGetInt32(GetResultDatum(0, 2, &isnull));
	return DatumGetInt32(GetResultDatum(0, 1, &isnull));
}

/*
 * MoveOwnedProcessingRun moves the run of key processing → to_state for
 * its live owner at version (request_approval, enqueue_effect). The usual
 * case is one UPDATE (TryMoveRun); only when it does not qualify is the
 * run locked and looked at, to tell a lost lease from another state, and
 * moved if it was only a race with the lease's own check. Returns the new
 * version, or -1 with *run describing the run (found, owned, state) for
 * the caller's refusal. Must be called inside SPI.
 */
int64
MoveOwnedProcessingRun(text *key, pg_uuid_t *owner, int64 version, const char *to_state,
					   EventDetails *details, OwnedRun *run)
{
	int64		new_version = TryMoveRun(key, owner, version, "processing", to_state, NULL, details);

	memset(run, 0, sizeof(*run));
	if (new_version >= 0)
		return new_version;
	LockOwnedRun(key, owner, version, run);
	if (run->found && run->owned && strcmp(run->state, "processing") == 0 && run->output_invalid)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_INVALID_OUTPUT),
				 errmsg("output of run \"%s\" failed validation", text_to_cstring(key)),
				 errdetail("The latest record_validation of this run was invalid; nothing is enqueued or sent for approval."),
				 errhint("Repair the output and call idemgate.record_validation() again; after idemgate.max_repairs repairs the run fails for good.")));
	if (run->found && run->owned && strcmp(run->state, "processing") == 0)
		return MoveRunState(key, "processing", to_state, NULL, false, details);
	return -1;
}

/*
 * A re-run's carrier (src/operations/rerun.c): a run that is approved from the start,
 * with no lease, no workflow and no payload of its own (its one effect
 * carries the input), so that the dispatcher may send that effect.
 */
static SavedStatement insert_approved_stmt = {
	"INSERT INTO idemgate.runs (idempotency_key, state, payload_hash/*@bucket_col*/)"
	" VALUES ($1, 'approved', $2/*@bucket_val*/)"
	" ON CONFLICT (idempotency_key/*@bucket_col*/) DO NOTHING /*@route $1*/",
	2, {TEXTOID, BYTEAOID}
};

/*
 * InsertApprovedRun inserts run key as approved, holding its new row;
 * false when the key exists already (nothing changed). Must be called
 * inside SPI.
 */
bool
InsertApprovedRun(text *key, bytea *payload_hash)
{
	Datum		values[2];

	values[0] = PointerGetDatum(key);
	values[1] = PointerGetDatum(payload_hash);
	if (ExecSaved(&insert_approved_stmt, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert run");
	return SPI_processed == 1;
}

/*
 * RenewRunLease extends the lease of a processing run its owner holds
 * (renew_lease's statement): the new expiry, or 0 with *renewed false when
 * the owner no longer holds it or the lease would outlive max_lease_life.
 * Must be called inside SPI.
 */
TimestampTz
RenewRunLease(text *key, Datum owner, Datum version, Interval *extend_by, bool *renewed)
{
	Datum		values[5];
	bool		isnull;

	values[0] = PointerGetDatum(key);
	values[1] = owner;
	values[2] = version;
	values[3] = IntervalPGetDatum(extend_by);
	values[4] = IntervalPGetDatum(UsecsToInterval((int64) IdemgateMaxLeaseLifeSecs * USECS_PER_SEC));
	if (ExecSaved(&renew_stmt, values, NULL, false, 1) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "renew statement failed");
	*renewed = SPI_processed > 0;
	return *renewed ? DatumGetTimestampTz(GetResultDatum(0, 1, &isnull)) : 0;
}

/*
 * LockRunToSupersede locks run key for supersede (FOR NO KEY UPDATE) and
 * gives its state and workflow (*workflow NULL when none); false when
 * there is no such run. Must be called inside SPI.
 */
bool
LockRunToSupersede(text *key, char **state, text **workflow)
{
	Datum		value = PointerGetDatum(key);
	bool		isnull;
	Datum		d;

	if (ExecSaved(&lock_original_stmt, &value, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "run look-up failed");
	if (SPI_processed == 0)
		return false;
	*state = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	d = GetResultDatum(0, 2, &isnull);
	*workflow = isnull ? NULL : DatumGetTextPCopy(d);
	return true;
}

/* RunSuccessor names the run that superseded key, or NULL. Must be called inside SPI. */
char *
RunSuccessor(text *key)
{
	Datum		value = PointerGetDatum(key);
	bool		isnull;

	if (ExecSavedLatest(&superseded_by_stmt, &value, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "successor look-up failed");
	return SPI_processed == 1 ? TextDatumGetCString(GetResultDatum(0, 1, &isnull)) : NULL;
}
