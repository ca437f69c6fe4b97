/*-------------------------------------------------------------------------
 *
 * src/deadletters.c
 *	  Dead letters: RecordDeadLetter writes them (for runs, approvals and
 *	  the outbox); reinject, reinject_all and resolve_effect are the
 *	  operator's way back.
 *
 * Design note. A dead letter is reinjected at most once: its row is locked
 * (FOR UPDATE) and reinjected_at is set in the same transaction as the
 * object it points to changes, so two operators reinjecting one letter at
 * once get true and false. Lock order is dead letter, then effect, then
 * run, the same as the outbox's effect-then-run order.
 *
 *	- effect letter: the effect (state failed) goes back to pending with
 *	  attempts 0, due now, keeping its effect_id, so the provider still sees
 *	  the same Idempotency-Key. Its run stays approved (a run is approved
 *	  for as long as any of its effects is not completed); a letter whose
 *	  run is no longer approved is refused, since its effect could never be
 *	  sent.
 *	- run letter: the run (failed_terminal) goes back to failed_retryable
 *	  with its failure count reset, so the next delivery of the same event
 *	  recovers it through claim. This is the one sanctioned exit from
 *	  failed_terminal.
 *
 * resolve_effect settles an unknown effect after an operator asked the
 * provider: delivered → completed (and the run completes with its last
 * effect), not delivered → pending, due now, attempts reset.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "args.h"
#include "deadletters.h"
#include "events.h"
#include "idemgate.h"
#include "outbox.h"
#include "runs.h"
#include "spi_util.h"
#include "dispatcher_wake.h"

PG_FUNCTION_INFO_V1(idemgate_reinject);
PG_FUNCTION_INFO_V1(idemgate_reinject_all);
PG_FUNCTION_INFO_V1(idemgate_resolve_effect);

static SavedStatement insert_dead_letter = {
	"INSERT INTO idemgate.dead_letters (kind, idempotency_key, effect_id, effect_type, "
	"payload, error_class, error, attempts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
	"RETURNING id",
	8, {TEXTOID, TEXTOID, UUIDOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, INT4OID}
};

/* What reinjecting one dead letter did. */
typedef enum ReinjectOutcome
{
	REINJECT_DONE,
	REINJECT_ALREADY,			/* reinjected before: false */
	REINJECT_REFUSED			/* its object is not in a state to go back */
} ReinjectOutcome;

static SavedStatement lock_letter_stmt = {
	"SELECT kind, idempotency_key, effect_id, reinjected_at IS NOT NULL"
	" FROM idemgate.dead_letters WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	1, {INT8OID}
};

static SavedStatement mark_letter_stmt = {
	"UPDATE idemgate.dead_letters SET reinjected_at = pg_catalog.now(), reinjected_by = $2"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	2, {INT8OID, TEXTOID}
};

static SavedStatement lock_effect_stmt = {
	"SELECT o.state, o.idempotency_key, r.state"
	" FROM idemgate.outbox o"
	" JOIN idemgate.runs r ON r.idempotency_key OPERATOR(pg_catalog.=) o.idempotency_key"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1 FOR UPDATE OF o",
	1, {UUIDOID}
};

static SavedStatement requeue_effect_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'pending', attempts = 0, next_attempt_at = pg_catalog.now(),"
	"     lease_owner = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1",
	1, {UUIDOID}
};

static SavedStatement resolve_completed_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'completed', provider_id = COALESCE($2, provider_id),"
	"     lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1",
	2, {UUIDOID, TEXTOID}
};

static SavedStatement lock_run_stmt = {
	"SELECT state FROM idemgate.runs"
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1 FOR UPDATE",
	1, {TEXTOID}
};

static SavedStatement reset_failures_stmt = {
	"UPDATE idemgate.runs SET failures = 0 WHERE idempotency_key OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static SavedStatement open_letters_stmt = {
	"SELECT id FROM idemgate.dead_letters"
	" WHERE reinjected_at IS NULL"
	"   AND ($1::text IS NULL OR (kind OPERATOR(pg_catalog.=) 'effect'"
	"                             AND effect_type OPERATOR(pg_catalog.=) $1))"
	"   AND ($2::timestamptz IS NULL OR dead_at OPERATOR(pg_catalog.>=) $2)"
	" ORDER BY id FOR UPDATE SKIP LOCKED",
	2, {TEXTOID, TIMESTAMPTZOID}
};

/* Refuse raises IG002 with why, or only reports the refusal in bulk. */
static ReinjectOutcome
Refuse(bool raise, int64 id, const char *why)
{
	if (raise)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("dead letter %lld cannot be reinjected: %s", (long long) id, why)));
	return REINJECT_REFUSED;
}

/*
 * ReinjectEffect requeues the failed effect of a dead letter; see the
 * design note.
 */
static ReinjectOutcome
ReinjectEffect(int64 id, pg_uuid_t *effect_id, const char *actor, bool raise)
{
	Datum		values[1];
	bool		isnull;
	char	   *state;
	char	   *run_state;
	text	   *key;
	EventDetails details;

	values[0] = UUIDPGetDatum(effect_id);
	if (ExecSaved(&lock_effect_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock effect");
	if (SPI_processed == 0)
		return Refuse(raise, id, "its effect no longer exists");
	state = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	key = DatumGetTextPCopy(GetResultDatum(0, 2, &isnull));
	run_state = TextDatumGetCString(GetResultDatum(0, 3, &isnull));
	if (strcmp(state, "failed") != 0)
		return Refuse(raise, id, psprintf("its effect is %s, not failed", state));
	if (strcmp(run_state, "approved") != 0)
		return Refuse(raise, id, psprintf("the effect's run is %s, not approved, so it could never be sent",
										  run_state));

	if (ExecSaved(&requeue_effect_stmt, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not requeue effect");
	DetailsInit(&details);
	DetailsInt(&details, "dead_letter_id", id);
	RecordEvent(key, effect_id, "effect_reinjected", actor, DetailsFinish(&details));
	WakeDispatcherAtCommit();
	return REINJECT_DONE;
}

/*
 * ReinjectRun moves the failed_terminal run of a dead letter back to
 * failed_retryable; see the design note.
 */
static ReinjectOutcome
ReinjectRun(int64 id, text *key, const char *actor, bool raise)
{
	Datum		values[1];
	bool		isnull;
	char	   *state;
	EventDetails details;

	values[0] = PointerGetDatum(key);
	if (ExecSaved(&lock_run_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock run");
	if (SPI_processed == 0)
		return Refuse(raise, id, "its run no longer exists");
	state = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	if (strcmp(state, "failed_terminal") != 0)
		return Refuse(raise, id, psprintf("its run is %s, not failed_terminal", state));

	/* One event: the reinjection and the state change it makes. */
	DetailsInit(&details);
	MoveRunState(key, "failed_terminal", "failed_retryable", NULL, false, &details);
	if (ExecSaved(&reset_failures_stmt, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not reset run failures");
	DetailsInt(&details, "dead_letter_id", id);
	RecordEvent(key, NULL, "run_reinjected", actor, DetailsFinish(&details));
	return REINJECT_DONE;
}

/*
 * ReinjectDeadLetter reinjects dead letter id once. Unknown id is IG003;
 * an object that cannot go back is IG002 when raise, else REFUSED.
 */
static ReinjectOutcome
ReinjectDeadLetter(int64 id, const char *actor, bool raise)
{
	Datum		values[2];
	bool		isnull;
	char	   *kind;
	text	   *key;
	pg_uuid_t  *effect_id = NULL;
	Datum		d;
	ReinjectOutcome outcome;

	values[0] = Int64GetDatum(id);
	if (ExecSaved(&lock_letter_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock dead letter");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("dead letter %lld does not exist", (long long) id),
				 errhint("List open dead letters with SELECT * FROM idemgate.dead_letters WHERE reinjected_at IS NULL.")));
	if (DatumGetBool(GetResultDatum(0, 4, &isnull)))
		return REINJECT_ALREADY;
	kind = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	key = DatumGetTextPCopy(GetResultDatum(0, 2, &isnull));
	d = GetResultDatum(0, 3, &isnull);
	if (!isnull)
	{
		effect_id = palloc(sizeof(pg_uuid_t));
		memcpy(effect_id, DatumGetUUIDP(d), sizeof(pg_uuid_t));
	}

	if (strcmp(kind, "effect") == 0 && effect_id != NULL)
		outcome = ReinjectEffect(id, effect_id, actor, raise);
	else
		outcome = ReinjectRun(id, key, actor, raise);
	if (outcome != REINJECT_DONE)
		return outcome;

	values[1] = CStringGetTextDatum(actor);
	if (ExecSaved(&mark_letter_stmt, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not mark dead letter reinjected");
	return REINJECT_DONE;
}

/*
 * idemgate_reinject implements reinject(id, actor): true when reinjected,
 * false when it had been reinjected already.
 */
Datum
idemgate_reinject(PG_FUNCTION_ARGS)
{
	int64		id;
	char	   *actor;
	ReinjectOutcome outcome;

	RequireArg(fcinfo, 0, "id");
	id = PG_GETARG_INT64(0);
	actor = text_to_cstring(TextArg(fcinfo, 1, "actor", IDEMGATE_MAX_NAME_BYTES));

	ConnectSPI();
	outcome = ReinjectDeadLetter(id, actor, true);
	SPI_finish();
	PG_RETURN_BOOL(outcome == REINJECT_DONE);
}

/*
 * idemgate_reinject_all implements reinject_all(actor, effect_type,
 * since): reinjects every open dead letter (only effect letters of
 * effect_type when given; only those dead since since when given) and
 * returns how many. Letters whose object cannot go back are skipped and
 * stay open; letters another session holds are skipped.
 */
Datum
idemgate_reinject_all(PG_FUNCTION_ARGS)
{
	char	   *actor;
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	uint64		n;
	int64	   *ids;
	int32		count = 0;

	actor = text_to_cstring(TextArg(fcinfo, 0, "actor", IDEMGATE_MAX_NAME_BYTES));
	if (PG_ARGISNULL(1))
	{
		values[0] = (Datum) 0;
		nulls[0] = 'n';
	}
	else
		values[0] = PointerGetDatum(TextArg(fcinfo, 1, "effect_type", IDEMGATE_MAX_NAME_BYTES));
	values[1] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[1] = PG_ARGISNULL(2) ? 'n' : ' ';

	ConnectSPI();
	if (ExecSaved(&open_letters_stmt, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list open dead letters");
	n = SPI_processed;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(GetResultDatum(i, 1, &isnull));
	}
	for (uint64 i = 0; i < n; i++)
		if (ReinjectDeadLetter(ids[i], actor, false) == REINJECT_DONE)
			count++;
	SPI_finish();
	PG_RETURN_INT32(count);
}

/*
 * idemgate_resolve_effect implements resolve_effect(effect_id, delivered,
 * actor, provider_id, note): settles an unknown effect and returns its new
 * state, completed or pending.
 */
Datum
idemgate_resolve_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	bool		delivered;
	char	   *actor;
	char	   *provider_id = NULL;
	char	   *note = NULL;
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		isnull;
	char	   *state;
	text	   *key;
	const char *new_state;
	EventDetails details;

	RequireArg(fcinfo, 0, "effect_id");
	effect_id = PG_GETARG_UUID_P(0);
	RequireArg(fcinfo, 1, "delivered");
	delivered = PG_GETARG_BOOL(1);
	actor = text_to_cstring(TextArg(fcinfo, 2, "actor", IDEMGATE_MAX_NAME_BYTES));
	if (!PG_ARGISNULL(3))
		provider_id = text_to_cstring(TextArg(fcinfo, 3, "provider_id", IDEMGATE_MAX_PROVIDER_ID_BYTES));
	if (!PG_ARGISNULL(4))
		note = text_to_cstring(TextArg(fcinfo, 4, "note", IDEMGATE_MAX_REASON_BYTES));

	ConnectSPI();
	values[0] = UUIDPGetDatum(effect_id);
	if (ExecSaved(&lock_effect_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock effect");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect %s does not exist",
						DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(effect_id))))));
	state = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	key = DatumGetTextPCopy(GetResultDatum(0, 2, &isnull));
	if (strcmp(state, "unknown") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("effect %s is %s; only unknown effects can be resolved",
						DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(effect_id))),
						state),
				 strcmp(state, "failed") == 0 ?
				 errhint("Failed effects go back with idemgate.reinject(dead_letter_id, actor).") : 0));

	if (delivered)
	{
		new_state = "completed";
		SetTextParam(values, nulls, 1, provider_id);
		if (ExecSaved(&resolve_completed_stmt, values, nulls, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not complete effect");
	}
	else
	{
		new_state = "pending";
		if (ExecSaved(&requeue_effect_stmt, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not requeue effect");
		WakeDispatcherAtCommit();
	}

	DetailsInit(&details);
	DetailsBool(&details, "delivered", delivered);
	DetailsText(&details, "new_state", new_state);
	DetailsText(&details, "provider_id", provider_id);
	DetailsText(&details, "note", note);
	RecordEvent(key, effect_id, "effect_resolved", actor, DetailsFinish(&details));
	if (delivered)
		CompleteRunIfDone(key);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(new_state));
}

/*
 * RecordDeadLetter stores a failure with its full input and error, and
 * records a matching event. Returns the dead letter id.
 */
int64
RecordDeadLetter(const char *kind, text *key, pg_uuid_t *effect_id,
				 const char *effect_type, Jsonb *payload,
				 const char *error_class, const char *error, int attempts)
{
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int64		id;
	EventDetails details;

	values[0] = CStringGetTextDatum(kind);
	values[1] = PointerGetDatum(key);
	values[2] = UUIDPGetDatum(effect_id);
	nulls[2] = effect_id ? ' ' : 'n';
	SetTextParam(values, nulls, 3, effect_type);
	values[4] = JsonbPGetDatum(payload);
	nulls[4] = payload ? ' ' : 'n';
	SetTextParam(values, nulls, 5, error_class);
	SetTextParam(values, nulls, 6, error);
	values[7] = Int32GetDatum(attempts);

	if (ExecSaved(&insert_dead_letter, values, nulls, false, 1) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record dead letter");
	id = DatumGetInt64(GetResultDatum(0, 1, &isnull));

	DetailsInit(&details);
	DetailsInt(&details, "dead_letter_id", id);
	DetailsText(&details, "error_class", error_class);
	DetailsText(&details, "error", error);
	DetailsInt(&details, "attempts", attempts);
	RecordEvent(key, effect_id, "dead_lettered", NULL, DetailsFinish(&details));
	return id;
}
