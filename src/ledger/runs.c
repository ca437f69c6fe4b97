/*-------------------------------------------------------------------------
 *
 * src/ledger/runs.c
 *	  The idempotency ledger: the runs table's writer, in three files by
 *	  job: the states and every transition here, the claim in
 *	  src/ledger/run_claim.c, run completion by its effects in
 *	  src/ledger/run_completion.c. claim()'s entry points, in both forms,
 *	  are src/ledger/claim_calls.c; cas_transition, renew_lease, fail and
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

static const char *const run_states[] = {
	"processing", "awaiting_human", "approved",
	"completed", "failed_retryable", "failed_terminal", NULL
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
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ " \
	"AND state OPERATOR(pg_catalog.=) $4" \
	"   AND ($3::pg_catalog.int8 IS NULL OR version OPERATOR(pg_catalog.=) $3)" \
	"   AND ($2::pg_catalog.uuid IS NULL" \
	"        OR (lease_owner OPERATOR(pg_catalog.=) $2" \
	"            AND lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.now()))" \
	EXTRA \
	" RETURNING version, workflow," \
	"   pg_catalog.round(pg_catalog.date_part('epoch'," \
	"     updated_at OPERATOR(pg_catalog.-) lease_started_at) OPERATOR(pg_catalog.*) " \
	"1000)::pg_catalog.int8"

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
	"SELECT state, workflow FROM idemgate.runs WHERE idempotency_key = $1/*@bucket*//*@route $1*/ "
	"FOR NO KEY UPDATE",
	1, {TEXTOID}
};

static SavedStatement superseded_by_stmt = {
	"SELECT e.details OPERATOR(pg_catalog.->>) 'new_key' FROM idemgate.events e"
	" WHERE e.idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket e*//*@route $1*/"
	"   AND e.kind OPERATOR(pg_catalog.=) 'superseded'"
	" ORDER BY e.id LIMIT 1",
	1, {TEXTOID}
};

static SavedStatement reset_failures_stmt = {
	"UPDATE idemgate.runs SET failures = 0 "
	"WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
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
			 errhint("A finished run never changes; use idemgate.supersede() with a new key to "
					 "redo the work.") :
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
	run->workflow = GetResultCString(0, 5);
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
	SetPointerParam(values, nulls, 1, owner);
	values[2] = Int64GetDatum(version ? *version : 0);
	nulls[2] = version ? ' ' : 'n';
	values[3] = CStringGetTextDatum(from_state);
	values[4] = CStringGetTextDatum(to_state);
	SetPointerParam(values, nulls, 5, result);
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
void
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

	return DatumGetInt32(ExecSavedValue(&count_validation_stmt, &value, NULL, false,
										SPI_OK_UPDATE_RETURNING, "could not count validation",
										&isnull));
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
	ExecSavedOneRow(&verdict_stmt, values, NULL, false, 1, SPI_OK_UPDATE_RETURNING,
					"could not record validation");
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
	int64		new_version = TryMoveRun(key, owner, version, "processing", to_state,
										 NULL, details);

	memset(run, 0, sizeof(*run));
	if (new_version >= 0)
		return new_version;
	LockOwnedRun(key, owner, version, run);
	if (run->found && run->owned && strcmp(run->state, "processing") == 0 && run->output_invalid)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_INVALID_OUTPUT),
				 errmsg("output of run \"%s\" failed validation", text_to_cstring(key)),
				 errdetail("The latest record_validation of this run was invalid; "
						   "nothing is enqueued or sent for approval."),
				 errhint("Repair the output and call idemgate.record_validation() again; "
						 "after idemgate.max_repairs repairs the run fails for good.")));
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
	ExecSavedExpect(&insert_approved_stmt, values, NULL, false, 0, SPI_OK_INSERT,
					"could not insert run");
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
	values[4] = IntervalPGetDatum(UsecsToInterval((int64) IdemgateMaxLeaseLifeSecs *
												  USECS_PER_SEC));
	ExecSavedExpect(&renew_stmt, values, NULL, false, 1, SPI_OK_UPDATE_RETURNING,
					"renew statement failed");
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

	if (!ExecSavedFind(&lock_original_stmt, value, "run look-up failed"))
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

