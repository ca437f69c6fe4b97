/*-------------------------------------------------------------------------
 *
 * src/operations/rerun.c
 *	  Re-runs (README.md "Dead letters", docs/operations.md): register_rerun
 *	  and the re-post of a run's stored input when its dead letter is
 *	  reinjected (reinject, reinject_all in src/operations/reinject.c).
 *
 * Design note. Reinjecting a run's dead letter moves the run
 * failed_terminal → failed_retryable, so that the next delivery of the
 * same event recovers it through claim. The seeds want more: a re-run
 * that re-sends the stored input, so nobody has to find and replay the
 * original event. That delivery must keep the outbox's guarantees (after
 * commit only, the kill switch and pauses, Idempotency-Key, retries,
 * dead letter), so it is an effect sent by the dispatcher to an endpoint
 * an operator registered: effect type "idemgate.rerun:<workflow>", target
 * the run's key, payload the run's input, POSTed as the body itself (not
 * the usual envelope, src/outbox/outbox_dispatch.c), so the workflow's webhook
 * receives exactly what it received the first time and its claim, with
 * the same key and payload hash, recovers the run.
 *
 * The run's state machine is why the effect does not belong to the run.
 * The dispatcher sends only effects of approved runs, but the reinjected
 * run must already be failed_retryable when the re-posted input arrives:
 * the workflow claims it during that very request, before the dispatcher
 * has even recorded the delivery. Had the run been moved to approved for
 * the send and back afterwards, that claim would find it approved and
 * answer duplicate, and the re-run would stop at once; and the run would
 * complete with the re-post as its only effect. So the effect belongs to a
 * carrier run of its own, key "idemgate.rerun:<dead letter id>", inserted
 * approved (no lease, no workflow, no payload; InsertApprovedRun in
 * src/ledger/runs.c) in the same transaction as the reinjection. The original
 * run keeps exactly the 1.0 transitions; the carrier completes when its
 * effect is delivered, and is purged like any finished run. A dead letter
 * is reinjected at most once, so its carrier key is new; a key taken by
 * a caller's own run is refused (23505) and nothing is reinjected.
 *
 * Exactly once: the re-post has a stable Idempotency-Key (its effect id)
 * and, whatever the transport does, the workflow's own claim dedupes — a
 * second copy finds the run processing under a live lease, or finished,
 * and is answered duplicate. The endpoint is therefore registered as
 * honouring the key: a timeout after sending is retried, not left unknown.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "core/crypto.h"
#include "core/dispatcher_wake.h"
#include "policy/endpoints.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "outbox/outbox.h"
#include "operations/rerun.h"
#include "ledger/runs.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_register_rerun);

StaticAssertDecl(sizeof(IDEMGATE_RERUN_TYPE_PREFIX) - 1 == IDEMGATE_RERUN_TYPE_PREFIX_BYTES,
				 "IDEMGATE_RERUN_TYPE_PREFIX_BYTES must be the prefix's length");

static SavedStatement rerun_endpoint_stmt = {
	"SELECT 1 FROM idemgate.endpoints WHERE effect_type OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* RerunType returns the effect type of workflow's re-runs. */
static char *
RerunType(const char *workflow)
{
	return psprintf("%s%s", IDEMGATE_RERUN_TYPE_PREFIX, workflow);
}

/* RequestRerun re-posts a reinjected run's input; see rerun.h. */
bool
RequestRerun(int64 dead_letter_id, text *key, const char *workflow, Jsonb *payload,
			 const char *actor, EventDetails *details)
{
	char	   *type;
	Datum		value;
	text	   *carrier;
	ParsedEffect effect;
	ArrayType  *ids;
	Datum	   *elems;
	int			n;

	if (workflow == NULL || payload == NULL ||
		strlen(workflow) > IDEMGATE_MAX_RERUN_WORKFLOW_BYTES)
		return false;
	type = RerunType(workflow);
	value = CStringGetTextDatum(type);
	if (!ExecSavedFind(&rerun_endpoint_stmt, value, "could not look up the re-run endpoint"))
		return false;

	carrier = cstring_to_text(psprintf("%s" INT64_FORMAT, IDEMGATE_RERUN_TYPE_PREFIX,
									   dead_letter_id));
	if (!InsertApprovedRun(carrier, HashJsonbPayload(payload)))
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("dead letter " INT64_FORMAT " cannot be re-run: key \"%s\" is taken "
						"by another run",
						dead_letter_id, text_to_cstring(carrier)),
				 errdetail("The re-post of a run's input is carried by a run of that key."),
				 errhint("Keys beginning with \"" IDEMGATE_RESERVED_TYPE_PREFIX "\" are best left "
						 "to idemgate.")));

	memset(&effect, 0, sizeof(effect));
	effect.type = type;
	effect.type_len = strlen(type);
	effect.target = text_to_cstring(key);
	effect.target_len = strlen(effect.target);
	effect.payload = payload;
	ids = InsertOutboxEffects(carrier, &effect, 1, false, actor, NULL);
	deconstruct_array(ids, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &elems, NULL, &n);

	DetailsText(details, "rerun_key", text_to_cstring(carrier));
	DetailsText(details, "rerun_effect_id",
				DatumGetCString(DirectFunctionCall1(uuid_out, elems[0])));
	return true;
}

/*
 * idemgate_register_rerun implements register_rerun(workflow, url,
 * headers, timeout): creates or replaces the endpoint a workflow's runs are
 * re-posted to when their dead letter is reinjected, audited with a
 * rerun_registered event (never the host, the path or header values).
 */
Datum
idemgate_register_rerun(PG_FUNCTION_ARGS)
{
	text	   *workflow = TextArg(fcinfo, 0, "workflow", IDEMGATE_MAX_RERUN_WORKFLOW_BYTES);
	text	   *url = TextArg(fcinfo, 1, "url", IDEMGATE_MAX_URL_BYTES);
	char	   *url_str = text_to_cstring(url);
	Jsonb	   *headers;
	Jsonb	   *header_names;
	Interval   *timeout;
	char	   *type = RerunType(text_to_cstring(workflow));
	bool		created;
	EventDetails details;

	RequireEndpointUrl(url_str);
	headers = HeadersArg(fcinfo, 2, &header_names);
	timeout = IntervalArg(fcinfo, 3, "timeout", 0, IDEMGATE_MAX_REQUEST_TIMEOUT_USECS, NULL);

	ConnectSPI();
	created = UpsertEndpoint(cstring_to_text(type), url, timeout, IDEMGATE_RERUN_MAX_ATTEMPTS,
							 true, headers, cstring_to_text("id"));

	DetailsInit(&details);
	DetailsText(&details, "workflow", text_to_cstring(workflow));
	DetailsText(&details, "effect_type", type);
	DetailsBool(&details, "created", created);
	AuditEndpointUrl(&details, url_str);
	DetailsInt(&details, "timeout_ms", IntervalToUsecs(timeout) / 1000);
	DetailsJsonb(&details, "header_names", header_names);
	RecordEvent(NULL, NULL, "rerun_registered", GetUserNameFromId(GetOuterUserId(), false),
				DetailsFinish(&details));
	WakeDispatcherAtCommit();	/* re-posts waiting for it may go now */
	SPI_finish();
	PG_RETURN_VOID();
}
