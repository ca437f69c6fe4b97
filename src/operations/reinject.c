/*-------------------------------------------------------------------------
 *
 * src/operations/reinject.c
 *	  The operator's way back from a dead letter: reinject, reinject_all
 *	  and resolve_effect. The rows they change are written by their
 *	  tables' modules (dead_letters.c, outbox.c, runs.c).
 *
 * Design note. A dead letter is reinjected at most once: its row is locked
 * (FOR UPDATE) and reinjected_at is set in the same transaction as the
 * object it points to changes, so two operators reinjecting one letter at
 * once get true and false. Lock order is dead letter, then effect, then
 * run, the same as the outbox's effect-then-run order.
 *
 *	- effect letter: the effect (state failed) goes back to pending with
 *	  attempts 0, due now, keeping its effect_id, so the provider still sees
 *	  the same Idempotency-Key. Its run, failed_terminal since its last
 *	  effect settled with this one failed (docs/outbox.md, "Completing a
 *	  run"), goes back to approved in the same event; a letter whose run
 *	  is in any other state is refused, since its effect could never be
 *	  sent.
 *	  With a corrected payload (reinject(id, actor, payload)), only for an
 *	  effect the provider refused (rejected: it never acted), the effect
 *	  becomes a new one instead: a new effect_id, so a new
 *	  Idempotency-Key, whose replaces column names the failed one; the
 *	  refused payload stays in the dead letter, the corrected one in the
 *	  effect's row; the effect_replaced event names the actor, the
 *	  replaced effect and the corrected payload's keyed hash (readers see
 *	  events, never payloads).
 *	- run letter: the run (failed_terminal) goes back to failed_retryable
 *	  with its failure count reset, so the next delivery of the same event
 *	  recovers it through claim. This is the one sanctioned exit from
 *	  failed_terminal. When the run's workflow has a re-run endpoint
 *	  (register_rerun), its stored input is also re-posted there through
 *	  the outbox, in the same transaction (src/operations/rerun.c says why that effect
 *	  belongs to a carrier run and not to this one).
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

#include "core/args.h"
#include "ledger/dead_letters.h"
#include "core/doc_limits.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "outbox/outbox.h"
#include "ledger/payload_hmac.h"
#include "core/crypto.h"
#include "operations/rerun.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_reinject);
PG_FUNCTION_INFO_V1(idemgate_reinject_all);
PG_FUNCTION_INFO_V1(idemgate_resolve_effect);

/* What reinjecting one dead letter did. */
typedef enum ReinjectOutcome
{
	REINJECT_DONE,
	REINJECT_ALREADY,			/* reinjected before: false */
	REINJECT_REFUSED			/* its object is not in a state to go back */
} ReinjectOutcome;

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
ReinjectEffect(int64 id, pg_uuid_t *effect_id, const char *actor, Jsonb *payload, bool raise)
{
	LockedEffect effect;
	EventDetails details;
	pg_uuid_t  *new_id = NULL;

	if (!LockEffect(effect_id, &effect))
		return Refuse(raise, id, "its effect no longer exists");
	if (strcmp(effect.state, "failed") != 0)
		return Refuse(raise, id, psprintf("its effect is %s, not failed", effect.state));
	if (effect.run_state == NULL)
		return Refuse(raise, id, "the effect's run no longer exists");
	/*
	 * A failed_terminal run with an open effect was failed by someone
	 * (fail, an operator), not by its effects: it stays failed.
	 */
	if (strcmp(effect.run_state, "approved") != 0 &&
		(strcmp(effect.run_state, "failed_terminal") != 0 || RunHasOpenEffects(effect.key)))
		return Refuse(raise, id, psprintf("the effect's run is %s, not approved, "
										  "so it could never be sent",
										  effect.run_state));

	DetailsInit(&details);
	DetailsInt(&details, "dead_letter_id", id);
	if (payload == NULL)
		RequeueLockedEffect(effect_id);
	else
	{
		/* The provider refused the payload: a corrected one, a new key. */
		new_id = ReplaceLockedEffect(effect_id, effect.key, payload);
		DetailsText(&details, "replaces",
					DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(effect_id))));
		/* The corrected payload is in the outbox row; readers see events. */
		DetailsText(&details, "payload_hmac", PayloadHmacHex(HashJsonbPayload(payload)));
	}
	/* The run ended with this failure (docs/outbox.md): it goes back. */
	if (strcmp(effect.run_state, "failed_terminal") == 0)
		MoveRunState(effect.key, "failed_terminal", "approved", NULL, false, &details);
	RecordEvent(effect.key, new_id ? new_id : effect_id,
				new_id ? "effect_replaced" : "effect_reinjected", actor, DetailsFinish(&details));
	return REINJECT_DONE;
}

/*
 * ReinjectRun moves the failed_terminal run of a dead letter back to
 * failed_retryable; see the design note.
 */
static ReinjectOutcome
ReinjectRun(int64 id, text *key, const char *actor, bool raise)
{
	pg_uuid_t	nobody;
	OwnedRun	run;
	EventDetails details;

	/* Locks the run and reads its state, workflow and input (no owner). */
	memset(&nobody, 0, sizeof(nobody));
	LockOwnedRun(key, &nobody, -1, &run);
	if (!run.found)
		return Refuse(raise, id, "its run no longer exists");
	if (strcmp(run.state, "failed_terminal") != 0)
		return Refuse(raise, id, psprintf("its run is %s, not failed_terminal", run.state));

	/* One event: the reinjection, the state change and the re-post. */
	DetailsInit(&details);
	MoveRunState(key, "failed_terminal", "failed_retryable", NULL, false, &details);
	ResetRunFailures(key);
	DetailsInt(&details, "dead_letter_id", id);
	RequestRerun(id, key, run.workflow, run.payload, actor, &details);
	RecordEvent(key, NULL, "run_reinjected", actor, DetailsFinish(&details));
	return REINJECT_DONE;
}

/*
 * ReinjectDeadLetter reinjects dead letter id once. Unknown id is IG003;
 * an object that cannot go back is IG002 when raise, else REFUSED.
 */
static ReinjectOutcome
ReinjectDeadLetter(int64 id, const char *actor, Jsonb *payload, bool raise)
{
	DeadLetterRef letter;
	ReinjectOutcome outcome;

	if (!LockDeadLetter(id, &letter))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("dead letter %lld does not exist", (long long) id),
				 errhint("List open dead letters with SELECT * FROM idemgate.dead_letters "
						 "WHERE reinjected_at IS NULL.")));
	if (letter.reinjected)
		return REINJECT_ALREADY;

	if (payload != NULL && (strcmp(letter.kind, "effect") != 0 || letter.effect_id == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("dead letter %lld cannot be reinjected with a payload: "
						"it is a run's dead letter", (long long) id),
				 errhint("Reinject it without a payload (the next delivery recovers the run), "
						 "or send the corrected input with idemgate.supersede().")));
	if (payload != NULL &&
		(letter.error_class == NULL || strcmp(letter.error_class, "rejected") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("dead letter %lld cannot be reinjected with a payload: its effect failed "
						"as %s, not rejected",
						(long long) id, letter.error_class ? letter.error_class : "(no class)"),
				 errdetail("Only a payload the provider refused (rejected) can be replaced: "
						   "after any other failure the provider may have acted on "
						   "the one it got."),
				 errhint("Reinject it without a payload to send the same effect again with the "
						 "same Idempotency-Key.")));
	if (strcmp(letter.kind, "effect") == 0 && letter.effect_id != NULL)
		outcome = ReinjectEffect(id, letter.effect_id, actor, payload, raise);
	else
		outcome = ReinjectRun(id, letter.key, actor, raise);
	if (outcome == REINJECT_DONE)
		MarkDeadLetterReinjected(id, actor);
	return outcome;
}

/*
 * idemgate_reinject implements reinject(id, actor, payload): true when
 * reinjected, false when it had been reinjected already. With a payload,
 * the rejected effect of the letter is replaced (ReinjectEffect).
 */
Datum
idemgate_reinject(PG_FUNCTION_ARGS)
{
	int64		id;
	char	   *actor;
	Jsonb	   *payload = NULL;
	ReinjectOutcome outcome;

	id = REQUIRED_ARG(0, "id", INT64);
	actor = text_to_cstring(TextArg(fcinfo, 1, "actor", IDEMGATE_MAX_NAME_BYTES));
	/* 1.3: a corrected payload (absent from an older schema's signature). */
	if (PG_NARGS() > 2 && !PG_ARGISNULL(2))
	{
		CheckDocumentArg(fcinfo, 2, "payload");
		payload = PG_GETARG_JSONB_P(2);
		if (!JB_ROOT_IS_OBJECT(payload) || JB_ROOT_IS_SCALAR(payload))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"payload\" must be a JSON object"),
					 errhint("Pass the corrected payload of the effect, e.g. '{\"to\": "
							 "\"ana@example.com\"}'.")));
	}

	ConnectSPI();
	outcome = ReinjectDeadLetter(id, actor, payload, true);
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
	text	   *effect_type = NULL;
	int			n;
	int64	   *ids;
	int32		count = 0;

	actor = text_to_cstring(TextArg(fcinfo, 0, "actor", IDEMGATE_MAX_NAME_BYTES));
	if (!PG_ARGISNULL(1))
		effect_type = TextArg(fcinfo, 1, "effect_type", IDEMGATE_MAX_NAME_BYTES);

	ConnectSPI();
	ids = LockOpenDeadLetters(effect_type, PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2),
							  PG_ARGISNULL(2), &n);
	for (int i = 0; i < n; i++)
		if (ReinjectDeadLetter(ids[i], actor, NULL, false) == REINJECT_DONE)
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
	LockedEffect effect;
	char	   *state;
	text	   *key;
	const char *new_state;
	EventDetails details;

	effect_id = REQUIRED_ARG(0, "effect_id", UUID_P);
	delivered = REQUIRED_ARG(1, "delivered", BOOL);
	actor = text_to_cstring(TextArg(fcinfo, 2, "actor", IDEMGATE_MAX_NAME_BYTES));
	if (!PG_ARGISNULL(3))
		provider_id = text_to_cstring(TextArg(fcinfo, 3, "provider_id",
											  IDEMGATE_MAX_PROVIDER_ID_BYTES));
	if (!PG_ARGISNULL(4))
		note = text_to_cstring(TextArg(fcinfo, 4, "note", IDEMGATE_MAX_REASON_BYTES));

	ConnectSPI();
	if (!LockEffect(effect_id, &effect))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect %s does not exist",
						DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(effect_id))))));
	state = effect.state;
	key = effect.key;
	if (strcmp(state, "unknown") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("effect %s is %s; only unknown effects can be resolved",
						DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(effect_id))),
						state),
				 strcmp(state, "failed") == 0 ?
				 errhint("Failed effects go back with "
						 "idemgate.reinject(dead_letter_id, actor).") : 0));

	if (delivered)
	{
		new_state = "completed";
		ResolveLockedEffectDelivered(effect_id, provider_id);
	}
	else
	{
		new_state = "pending";
		RequeueLockedEffect(effect_id);
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
