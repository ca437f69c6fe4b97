/*-------------------------------------------------------------------------
 *
 * src/operations/cancel.c
 *	  cancel_effect and cancel_approval: an operator stops work that should
 *	  not happen any more; cancel_in_window: an approver stops an automatic
 *	  effect while its type's cancel window is open.
 *
 * Design note. cancel_effect locks the outbox row (FOR UPDATE, no SKIP) and
 * re-checks its state under the lock: a claim that marked it sending first
 * wins (the cancel then sees sending and raises IG002); a cancel that locked
 * it first makes a concurrent claim skip it, and after commit the row is
 * cancelled, which no claim statement selects. Only pending and unknown
 * effects can be cancelled: a sending effect may be on the wire. Cancelled
 * is settled like completed: the run completes when its other effects are
 * completed or cancelled (effect first, then run, the same lock order as
 * complete_effect), and purge may delete it.
 *
 * cancel_in_window is the approver's cancel_effect, bounded by the effect
 * type's policy (src/policy/effect_policies.c): only an effect that enqueue_effect
 * held for a cancel window (outbox.cancel_until set), still pending, before
 * cancel_until. The approver bundle gets this function, not cancel_effect:
 * an approver can stop what was about to happen automatically, never what
 * a human approved, nor an unknown effect after the window. The lock and
 * re-check are cancel_effect's; the window's end is the effect's due time,
 * so a claim can only take it after the window closed, and whichever of
 * the claim and the cancel locks the row first wins.
 *
 * cancel_approval consumes an undecided approval with decision cancelled
 * and fails its run (awaiting_human → failed_terminal) like a rejection:
 * a decision, so no dead letter. The approval row is locked first, then
 * the run, the same order as consume_approval, so the two serialise and
 * exactly one of them decides.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "approvals/approvals.h"
#include "core/args.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "outbox/outbox.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_cancel_effect);
PG_FUNCTION_INFO_V1(idemgate_cancel_approval);
PG_FUNCTION_INFO_V1(idemgate_cancel_in_window);

#define MAX_ACTOR_BYTES IDEMGATE_MAX_NAME_BYTES
#define MAX_REASON_BYTES IDEMGATE_MAX_REASON_BYTES

/* UuidString renders a uuid for messages and event details. */
static char *
UuidString(pg_uuid_t *id)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(id)));
}

/*
 * FinishCancel cancels a locked effect, records its effect_cancelled event
 * (with in_window_until when until_text is not NULL) and completes its run
 * when that was the run's last open effect; it returns the "cancelled"
 * answer.
 */
static Datum
FinishCancel(pg_uuid_t *effect_id, LockedEffect *effect, const char *reason,
			 const char *until_text, const char *actor)
{
	EventDetails details;

	CancelLockedEffect(effect_id);

	DetailsInit(&details);
	DetailsText(&details, "effect_type", effect->effect_type);
	DetailsText(&details, "previous_state", effect->state);
	DetailsText(&details, "reason", reason);
	if (until_text != NULL)
		DetailsText(&details, "in_window_until", until_text);
	RecordEvent(effect->key, effect_id, "effect_cancelled", actor, DetailsFinish(&details));
	CompleteRunIfDone(effect->key);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text("cancelled"));
}

/*
 * idemgate_cancel_effect implements cancel_effect(effect_id, actor, reason):
 * pending or unknown → cancelled; returns the new state.
 */
Datum
idemgate_cancel_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	char	   *actor;
	char	   *reason;
	LockedEffect effect;
	char	   *state;

	effect_id = REQUIRED_ARG(0, "effect_id", UUID_P);
	actor = text_to_cstring(TextArg(fcinfo, 1, "actor", MAX_ACTOR_BYTES));
	reason = text_to_cstring(TextArg(fcinfo, 2, "reason", MAX_REASON_BYTES));

	ConnectSPI();
	if (!LockEffect(effect_id, &effect))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect %s does not exist", UuidString(effect_id))));
	state = effect.state;
	if (strcmp(state, "pending") != 0 && strcmp(state, "unknown") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("effect %s is %s; only pending or unknown effects can be cancelled",
						UuidString(effect_id), state),
				 strcmp(state, "sending") == 0 ?
				 errhint("It may be on the wire now: wait for its outcome, or pause its type with "
						 "idemgate.pause_effect_type().") :
				 strcmp(state, "failed") == 0 ?
				 errhint("A failed effect is already stopped; its dead letter can stay "
						 "or be purged.") : 0));
	return FinishCancel(effect_id, &effect, reason, NULL, actor);
}

/*
 * idemgate_cancel_in_window implements cancel_in_window(effect_id,
 * approver, reason): an automatic effect inside its cancel window →
 * cancelled; returns the new state.
 */
Datum
idemgate_cancel_in_window(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	char	   *approver;
	char	   *reason = NULL;
	LockedEffect effect;
	bool		has_window;
	bool		window_open;
	TimestampTz cancel_until;
	char	   *until_text;

	effect_id = REQUIRED_ARG(0, "effect_id", UUID_P);
	approver = text_to_cstring(TextArg(fcinfo, 1, "approver", MAX_ACTOR_BYTES));
	if (!PG_ARGISNULL(2))
		reason = text_to_cstring(TextArg(fcinfo, 2, "reason", MAX_REASON_BYTES));

	ConnectSPI();
	if (!LockEffectWindow(effect_id, &effect, &has_window, &window_open, &cancel_until))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect %s does not exist", UuidString(effect_id))));
	if (!has_window)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("effect %s has no cancel window", UuidString(effect_id)),
				 errdetail("An approver may cancel only automatic effects of a type whose policy "
						   "has a cancel_window, inside that window."),
				 errhint("An operator may cancel it with idemgate.cancel_effect().")));
	until_text = JsonEncodeDateTime(NULL, TimestampTzGetDatum(cancel_until), TIMESTAMPTZOID, NULL);
	if (strcmp(effect.state, "pending") != 0 || !window_open)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("the cancel window of effect %s is over; it is %s",
						UuidString(effect_id), effect.state),
				 errdetail("The window ended at %s.", until_text),
				 strcmp(effect.state, "pending") == 0 || strcmp(effect.state, "unknown") == 0 ?
				 errhint("An operator may still cancel it with idemgate.cancel_effect().") : 0));
	return FinishCancel(effect_id, &effect, reason, until_text, approver);
}

/*
 * idemgate_cancel_approval implements cancel_approval(approval_id, actor,
 * reason): cancelled when the approval was undecided and its run still
 * waits on it (the run fails like a rejection), invalid otherwise.
 */
Datum
idemgate_cancel_approval(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *approval_id;
	char	   *actor;
	char	   *reason;
	text	   *key;
	int64		run_version;
	bool		open;
	EventDetails details;
	const char *outcome = "invalid";

	approval_id = REQUIRED_ARG(0, "approval_id", UUID_P);
	actor = text_to_cstring(TextArg(fcinfo, 1, "actor", MAX_ACTOR_BYTES));
	reason = text_to_cstring(TextArg(fcinfo, 2, "reason", MAX_REASON_BYTES));

	ConnectSPI();
	if (!LockApproval(approval_id, &key, &run_version, &open))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("approval %s does not exist", UuidString(approval_id))));
	/*
	 * The run must still wait on this approval, at the version the request
	 * put it in; the test and the state change (it fails like a rejection)
	 * are one statement. One event: the cancellation and that change.
	 */
	DetailsInit(&details);
	if (open)
	{
		Jsonb	   *result = DecisionResult("cancelled", "cancelled_by", actor, reason);

		if (TryMoveRun(key, NULL, run_version, "awaiting_human", "failed_terminal",
					   result, &details) >= 0)
			outcome = "cancelled";
	}

	if (strcmp(outcome, "cancelled") == 0)
	{
		char	   *approval_text = UuidString(approval_id);

		CancelLockedApproval(approval_id, actor);

		DetailsText(&details, "approval_id", approval_text);
		DetailsText(&details, "reason", reason);
		RecordEvent(key, NULL, "approval_cancelled", actor, DetailsFinish(&details));
	}
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(outcome));
}
