/*-------------------------------------------------------------------------
 *
 * src/operations/enqueue.c
 *	  enqueue_effect, the automatic path (no human), under the effect
 *	  types' policies (src/policy/effect_policies.c).
 *
 * Design note. An effect is recorded in idemgate.outbox in the same
 * transaction that decides it may happen: enqueue_effect moves the run
 * processing → approved, consume_approval moves it awaiting_human →
 * approved. Both hold the run's row lock (FOR UPDATE) while inserting, so
 * two inserts for one key never race; UNIQUE (idempotency_key, effect_type,
 * target) with ON CONFLICT DO NOTHING makes a re-enqueue (after a
 * reinjected run is recovered) return the existing effect instead of
 * making a second row. A retried enqueue_effect on a run it already
 * approved (live owner, current version, only effects already enqueued) is
 * answered from the outbox and changes nothing. The dispatcher only sends
 * effects of approved runs and is woken after commit.
 *
 * Policies, read before the run is touched (their lock and why it is
 * safe against set_effect_policy: src/policy/effect_policies.c):
 *   requires_approval  42501, nothing changes.
 *   review_sample      a sampled call is a request for approval instead:
 *                      the run goes processing → awaiting_human (the same
 *                      one-statement move, the same ownership rules), an
 *                      approval holds the effects (src/approvals/approvals.c), and
 *                      the result has no effect ids and review_requested =
 *                      {approval_id, token, expires_at, effect_types,
 *                      review_sample}. The token is returned once, like
 *                      request_approval's, and never stored.
 *   cancel_window      each effect of the type is not due before the
 *                      window ends, and the outbox records that end
 *                      (cancel_until) for cancel_in_window.
 *
 * The result. effect_ids and version keep their 1.0 meaning in every case
 * (effect_ids is empty when nothing was enqueued); review_requested is a
 * third column, NULL unless the call was turned into a review. While the
 * library serves an older schema (before ALTER EXTENSION UPDATE) the
 * declared result has two columns and there are no policies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "approvals/approvals.h"
#include "core/args.h"
#include "core/doc_limits.h"
#include "policy/effect_policies.h"
#include "outbox/effects.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "outbox/outbox.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "policy/undeclared_types.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_enqueue_effect);

/* Columns of the result: effect_ids, version, review_requested (1.2). */
#define ENQUEUE_COLUMNS 3

/* JsonbFromText parses JSON text built here. */
static Jsonb *
JsonbFromText(const char *json)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
}

/*
 * RequestReview turns a sampled call into an approval request for the run
 * the caller just moved to awaiting_human at version, and returns the
 * review_requested document. details holds the state change.
 */
static Jsonb *
RequestReview(text *key, int64 version, Jsonb *effects, const ParsedEffect *parsed, int n,
			  const EffectPolicies *policies, double sample, EventDetails *details)
{
	StringInfoData types;
	char	   *sample_text = psprintf("%g", sample);
	EventDetails card;
	EventDetails review;
	NewApproval approval;
	int			ntypes = 0;

	/* The types of the call that the policy samples, as a JSON array. */
	initStringInfo(&types);
	appendStringInfoChar(&types, '[');
	for (int i = 0; i < n; i++)
	{
		const EffectPolicy *p = FindEffectPolicy(policies, parsed[i].type);
		bool		seen = false;

		if (p == NULL || p->review_sample <= 0)
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(parsed[j].type, parsed[i].type) == 0;
		if (seen)
			continue;
		if (ntypes++ > 0)
			appendStringInfoString(&types, ", ");
		escape_json(&types, parsed[i].type);
	}
	appendStringInfoChar(&types, ']');

	/* What the approver sees beside the effects: why a human is asked. */
	DetailsInit(&card);
	DetailsText(&card, "review", "sampled");
	DetailsJsonb(&card, "review_sample", JsonbFromText(sample_text));
	DetailsJsonb(&card, "effect_types", JsonbFromText(types.data));

	DetailsText(details, "review", "sampled");
	DetailsJsonb(details, "review_sample", JsonbFromText(sample_text));
	InsertApproval(key, version, effects, n, UsecsToInterval(IDEMGATE_REVIEW_EXPIRY_USECS),
				   DetailsFinish(&card), NULL, NULL, NULL, details, &approval);
	CountReviewRequested(policies);

	DetailsInit(&review);
	DetailsText(&review, "approval_id",
				DatumGetCString(DirectFunctionCall1(uuid_out,
													UUIDPGetDatum(approval.approval_id))));
	DetailsText(&review, "token", approval.token);
	DetailsText(&review, "expires_at",
				JsonEncodeDateTime(NULL, approval.expires_at, TIMESTAMPTZOID, NULL));
	DetailsJsonb(&review, "effect_types", JsonbFromText(types.data));
	DetailsJsonb(&review, "review_sample", JsonbFromText(sample_text));
	return DetailsFinish(&review);
}

/*
 * idemgate_enqueue_effect implements enqueue_effect(key, owner, version,
 * effects): the automatic path. As the live owner of a processing run, the
 * caller's effects are inserted and the run becomes approved in one step,
 * unless a policy refuses the types or samples the call for review (see
 * the design note). A row of NULLs when ownership was lost; IG002 from any
 * other state, except a replay: on an approved run, the live owner at the
 * current version passing only effects already enqueued gets their ids
 * and the current version back, and nothing changes.
 */
Datum
idemgate_enqueue_effect(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	pg_uuid_t  *owner;
	int64		version;
	Jsonb	   *effects;
	ParsedEffect *parsed;
	int			n;
	EffectPolicies policies;
	bool		review = false;
	double		sample = 0;
	OwnedRun	run;
	int64		new_version;
	EventDetails details;
	ReturnSetInfo *rsinfo;
	Datum		row[ENQUEUE_COLUMNS] = {0, 0, 0};
	bool		rownulls[ENQUEUE_COLUMNS] = {true, true, true};

	owner = REQUIRED_ARG(1, "owner", UUID_P);
	version = REQUIRED_ARG(2, "version", INT64);
	effects = DocumentArg(fcinfo, 3, "effects");
	n = ParseEffects(effects, "effects", &parsed);	/* checked before anything is locked */

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	ReadEffectPolicies(parsed, n, &policies);
	RefuseTypesRequiringApproval(&policies);
	NoticeUndeclaredTypes(parsed, n);
	/* A review needs the result column that carries its token. */
	if (rsinfo->setDesc->natts >= ENQUEUE_COLUMNS)
		review = DrawReview(&policies, &sample);

	/* One event: the enqueue (or the review) and the state change it makes. */
	DetailsInit(&details);
	new_version = MoveOwnedProcessingRun(key, owner, version,
										 review ? "awaiting_human" : "approved", &details, &run);
	if (new_version < 0 && run.found && run.owned)
	{
		/* A replay may repeat only effects already enqueued. */
		ArrayType  *existing = strcmp(run.state, "approved") == 0 ?
			ExistingEffectIds(key, parsed, n) : NULL;

		if (strcmp(run.state, "approved") == 0 && existing == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
					 errmsg("run \"%s\" is already approved; effects not enqueued before "
							"cannot be added",
							text_to_cstring(key)),
					 errdetail("enqueue_effect adds effects only while the run is processing; "
							   "a replay may repeat only effects already enqueued."),
					 errhint("Send new effects under a new key, or use idemgate.supersede() once "
							 "this run is finished.")));
		if (existing == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
					 errmsg("illegal transition of run \"%s\" from %s to approved",
							text_to_cstring(key), run.state),
					 errdetail("enqueue_effect approves only a run that is processing."),
					 strcmp(run.state, "awaiting_human") == 0 ?
					 errhint("This run waits for a human: its effects are enqueued by "
							 "idemgate.consume_approval().") :
					 errhint("The effects of this run were already decided; stop here.")));
		row[0] = PointerGetDatum(existing);
		row[1] = Int64GetDatum(run.version);
		rownulls[0] = rownulls[1] = false;
	}
	if (new_version >= 0 && review)
	{
		row[0] = PointerGetDatum(construct_empty_array(UUIDOID));
		row[1] = Int64GetDatum(new_version);
		row[2] = JsonbPGetDatum(RequestReview(key, new_version, effects, parsed, n, &policies,
											  sample, &details));
		rownulls[0] = rownulls[1] = rownulls[2] = false;
	}
	else if (new_version >= 0)
	{
		ApplyCancelWindows(&policies, parsed, n);
		row[1] = Int64GetDatum(new_version);
		row[0] = PointerGetDatum(InsertOutboxEffects(key, parsed, n, true, NULL, &details));
		rownulls[0] = rownulls[1] = false;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	SPI_finish();
	return (Datum) 0;
}
