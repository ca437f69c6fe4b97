/*-------------------------------------------------------------------------
 *
 * src/ledger/claim_calls.c
 *	  claim()'s entry points (SPEC §2): claim(key, payload, lease, workflow,
 *	  owner, origin), claim(request jsonb) — the one-parameter form n8n's
 *	  Postgres node sends — claim_in_bucket (Citus), and hash_payload.
 *	  They read and check their arguments and hand the claim to the runs
 *	  module (src/ledger/run_claim.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "citus/distributed.h"
#include "citus/shard_autocommit.h"
#include "citus/statements.h"
#include "core/args.h"
#include "core/crypto.h"
#include "core/doc_limits.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "ledger/runs.h"

PG_FUNCTION_INFO_V1(idemgate_claim);
PG_FUNCTION_INFO_V1(idemgate_claim_request);
PG_FUNCTION_INFO_V1(idemgate_claim_in_bucket);
PG_FUNCTION_INFO_V1(idemgate_hash_payload);

/* A workflow name is indexed, so bounded like a watch_workflow name. */
#define MAX_WORKFLOW_BYTES IDEMGATE_MAX_NAME_BYTES

/* claim()'s arguments. */
typedef struct ClaimArgs
{
	text	   *key;
	Jsonb	   *payload;
	Interval   *lease;
	text	   *workflow;		/* or NULL */
	pg_uuid_t  *owner;			/* or NULL */
	text	   *origin;			/* or NULL */
} ClaimArgs;

/*
 * WorkflowArg returns the optional workflow argument, or NULL. It is
 * indexed (runs_workflow_created_idx), so its length is bounded like a
 * watch_workflow name.
 */
static text *
WorkflowArg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : TextArg(fcinfo, argno, "workflow", MAX_WORKFLOW_BYTES);
}

/*
 * OriginArg returns the optional origin argument (where the trigger came
 * from: docs/n8n.md), or NULL; absent when the function was declared
 * without it (a 1.1 schema on this library).
 */
static text *
OriginArg(FunctionCallInfo fcinfo, int argno)
{
	return PG_NARGS() <= argno || PG_ARGISNULL(argno) ? NULL :
		TextArg(fcinfo, argno, "origin", IDEMGATE_MAX_ORIGIN_BYTES);
}

/* ReadClaimArgs reads claim()'s arguments, key first at argument first. */
static void
ReadClaimArgs(FunctionCallInfo fcinfo, int first, ClaimArgs *args)
{
	args->key = KeyArg(fcinfo, first, "key");
	RequireArg(fcinfo, first + 1, "payload");
	CheckDocumentArg(fcinfo, first + 1, "payload");
	args->payload = PG_GETARG_JSONB_P(first + 1);
	args->lease = LeaseArg(fcinfo, first + 2, "lease");
	args->workflow = WorkflowArg(fcinfo, first + 3);
	args->owner = PG_ARGISNULL(first + 4) ? NULL : PG_GETARG_UUID_P(first + 4);
	args->origin = OriginArg(fcinfo, first + 5);
}

/*
 * EmitClaim makes the claim and returns its one row, for claim(),
 * claim(jsonb) and claim_in_bucket. in_bucket: claim_in_bucket's, whose
 * statements are one transaction even when Citus did not delegate it, and
 * for which payload_mismatch is an outcome. Otherwise, on Citus, a call
 * that is its whole transaction (src/citus/shard_autocommit.c) runs on the key's
 * node (ClaimInBucket); any other runs here, in the caller's transaction.
 */
static Datum
EmitClaim(FunctionCallInfo fcinfo, const ClaimArgs *args, bool in_bucket)
{
	ClaimResult res = {0};

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ConnectSPI();
	if (in_bucket)
	{
		int			nestlevel = BeginShardTransactions();

		for (int i = 0; i < 7; i++)
			res.nulls[i] = true;
		res.mismatch_is_outcome = true;
		ClaimRun(args->key, args->payload, args->lease, args->workflow, args->owner,
				 NULL, NULL, args->origin, &res);
		EndShardAutocommit(nestlevel);
	}
	else if (IdemgateIsDistributed() && CallIsWholeTransaction(fcinfo))
		ClaimInBucket(args->key, args->payload, args->lease, args->workflow, args->owner,
					  args->origin, &res);
	else
		ClaimRun(args->key, args->payload, args->lease, args->workflow, args->owner,
				 NULL, NULL, args->origin, &res);
	EmitClaimResult(fcinfo, &res);
	SPI_finish();
	return (Datum) 0;
}

/*
 * idemgate_claim implements claim(key, payload, lease, workflow, owner,
 * origin): exactly one row, outcome claimed, recovered or duplicate.
 */
Datum
idemgate_claim(PG_FUNCTION_ARGS)
{
	ClaimArgs	args;

	ReadClaimArgs(fcinfo, 0, &args);
	return EmitClaim(fcinfo, &args, false);
}

/*
 * idemgate_claim_in_bucket implements claim_in_bucket(bucket, key, payload,
 * lease, workflow, owner, origin), which Citus runs on the node of the
 * bucket's shard (idemgate--1.1--1.2.sql, part 66_claim_in_bucket): claim's outcome,
 * or payload_mismatch with the workflow to count it under.
 */
Datum
idemgate_claim_in_bucket(PG_FUNCTION_ARGS)
{
	ClaimArgs	args;

	RequireArg(fcinfo, 0, "bucket");
	ReadClaimArgs(fcinfo, 1, &args);
	if (PG_GETARG_INT32(0) != KeyBucket(VARDATA_ANY(args.key), VARSIZE_ANY_EXHDR(args.key)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bucket %d is not the bucket of key \"%s\"",
						PG_GETARG_INT32(0), text_to_cstring(args.key))));
	return EmitClaim(fcinfo, &args, true);
}

/* RequestField finds field name in the request object, or NULL. */
static JsonbValue *
RequestField(Jsonb *request, const char *name)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&request->root, name, strlen(name), NULL);

	if (v != NULL && v->type == jbvNull)
		return NULL;
	return v;
}

/* RequestString returns a string field as text, checking its type. */
static text *
RequestString(Jsonb *request, const char *name, bool required)
{
	JsonbValue *v = RequestField(request, name);

	if (v == NULL)
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("field \"%s\" of argument \"request\" must not be missing or null",
							name)));
		return NULL;
	}
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" of argument \"request\" must be a JSON string", name)));
	return cstring_to_text_with_len(v->val.string.val, v->val.string.len);
}

/*
 * ParseRequestText converts a string field with a type's input function,
 * reporting bad input as 22023 naming the field. Input functions only
 * allocate and raise, so catching their error without a subtransaction is
 * safe.
 */
static Datum
ParseRequestText(text *value, const char *field, PGFunction input, const char *what)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	char	   *str = text_to_cstring(value);
	volatile Datum result = (Datum) 0;
	volatile bool failed = false;

	PG_TRY();
	{
		if (input == interval_in)
			result = DirectFunctionCall3(interval_in, CStringGetDatum(str),
										 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		else
			result = DirectFunctionCall1(input, CStringGetDatum(str));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		FlushErrorState();
		failed = true;
	}
	PG_END_TRY();
	if (failed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" of argument \"request\" must be %s, not \"%s\"",
						field, what, TruncateForMessage(str))));
	return result;
}

/*
 * idemgate_claim_request implements claim(request jsonb), the form for
 * n8n: the arguments come from the fields key, payload, lease, workflow and
 * owner of one JSON object.
 */
Datum
idemgate_claim_request(PG_FUNCTION_ARGS)
{
	static const char *const known[] = {
		"key", "payload", "lease", "workflow", "owner", "origin", NULL
	};
	Jsonb	   *request;
	text	   *key;
	JsonbValue *payload_value;
	Jsonb	   *payload;
	text	   *lease_text;
	text	   *workflow;
	text	   *owner_text;
	text	   *origin;
	Interval   *lease;
	pg_uuid_t  *owner = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	RequireArg(fcinfo, 0, "request");
	CheckDocumentArg(fcinfo, 0, "request");
	request = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_OBJECT(request))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"request\" must be a JSON object with fields key, payload, "
						"lease, workflow, owner and origin")));

	/* An unknown field is most likely a typo ("paylaod"): refuse it. */
	it = JsonbIteratorInit(&request->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			bool		ok = false;

			for (int i = 0; known[i] != NULL && !ok; i++)
				ok = v.val.string.len == strlen(known[i]) &&
					memcmp(v.val.string.val, known[i], v.val.string.len) == 0;
			if (!ok)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown field \"%s\" in argument \"request\"",
								TruncateForMessage(pnstrdup(v.val.string.val, v.val.string.len))),
						 errhint("The fields are key, payload, lease, workflow, owner and "
								 "origin.")));
		}
	}

	key = RequestString(request, "key", true);
	CheckKeyText(key, "key");
	payload_value = RequestField(request, "payload");
	if (payload_value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("field \"payload\" of argument \"request\" must not be missing or null")));
	payload = JsonbValueToJsonb(payload_value);

	lease_text = RequestString(request, "lease", false);
	if (lease_text == NULL)
		lease = DatumGetIntervalP(DirectFunctionCall3(interval_in,
													  CStringGetDatum("5 minutes"),
													  ObjectIdGetDatum(InvalidOid),
													  Int32GetDatum(-1)));
	else
	{
		int64		usecs;

		lease = DatumGetIntervalP(ParseRequestText(lease_text, "lease", interval_in,
													"an interval"));
		usecs = IntervalToUsecs(lease);
		if (usecs <= 0 || usecs > (int64) IdemgateMaxLeaseLifeSecs * USECS_PER_SEC)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("field \"lease\" of argument \"request\" must be greater than 0 "
							"and at most idemgate.max_lease_life (%d s)",
							IdemgateMaxLeaseLifeSecs)));
	}
	workflow = RequestString(request, "workflow", false);
	if (workflow != NULL &&
		(VARSIZE_ANY_EXHDR(workflow) < 1 || VARSIZE_ANY_EXHDR(workflow) > MAX_WORKFLOW_BYTES))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"workflow\" of argument \"request\" must be between 1 and %d "
						"bytes long, not %d",
						MAX_WORKFLOW_BYTES, (int) VARSIZE_ANY_EXHDR(workflow))));
	owner_text = RequestString(request, "owner", false);
	if (owner_text != NULL)
		owner = DatumGetUUIDP(ParseRequestText(owner_text, "owner", uuid_in, "a UUID"));
	origin = RequestString(request, "origin", false);
	if (origin != NULL &&
		(VARSIZE_ANY_EXHDR(origin) < 1 || VARSIZE_ANY_EXHDR(origin) > IDEMGATE_MAX_ORIGIN_BYTES))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"origin\" of argument \"request\" must be between 1 and %d "
						"bytes long, not %d",
						IDEMGATE_MAX_ORIGIN_BYTES, (int) VARSIZE_ANY_EXHDR(origin))));

	{
		ClaimArgs	args = {key, payload, lease, workflow, owner, origin};

		return EmitClaim(fcinfo, &args, false);
	}
}

/* idemgate_hash_payload returns the SHA-256 of the payload's canonical text. */
Datum
idemgate_hash_payload(PG_FUNCTION_ARGS)
{
	RequireArg(fcinfo, 0, "payload");
	PG_RETURN_BYTEA_P(HashJsonbPayload(PG_GETARG_JSONB_P(0)));
}
