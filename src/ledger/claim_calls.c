/*-------------------------------------------------------------------------
 *
 * src/ledger/claim_calls.c
 *	  claim()'s entry points (SPEC §2): claim(key, payload, lease, workflow,
 *	  owner, origin), claim_in_bucket (Citus), and hash_payload. They read
 *	  and check their arguments and hand the claim to the runs module
 *	  (src/ledger/run_claim.c). claim(request jsonb), the one-parameter form
 *	  n8n's Postgres node sends, is a request form over claim()
 *	  (src/operations/request_forms.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "citus/distributed.h"
#include "citus/local_shards.h"
#include "citus/shard_autocommit.h"
#include "citus/statements.h"
#include "core/args.h"
#include "core/crypto.h"
#include "core/doc_limits.h"
#include "core/idemgate_limits.h"
#include "ledger/runs.h"

PG_FUNCTION_INFO_V1(idemgate_claim);
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
 * EmitClaim makes the claim and returns its one row, for claim() (and so
 * claim(jsonb)) and claim_in_bucket. in_bucket: claim_in_bucket's, whose
 * statements are one transaction even when Citus did not delegate it, and
 * for which payload_mismatch is an outcome. Otherwise, on Citus, a call
 * that is its whole transaction (src/citus/shard_autocommit.c) runs on the key's
 * node (ClaimInBucket), unless that is this node: then, as any other call,
 * it runs here, in the caller's transaction, on the shard's tables
 * (src/citus/local_shards.c), without Citus's delegation of the call.
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
	else if (IdemgateIsDistributed() && CallIsWholeTransaction(fcinfo) &&
			 LocalShardFor(KeyBucket(VARDATA_ANY(args->key),
									 VARSIZE_ANY_EXHDR(args->key))) < 0)
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
 * bucket's shard (sql/functions/claim_in_bucket.sql): claim's outcome,
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

/* idemgate_hash_payload returns the SHA-256 of the payload's canonical text. */
Datum
idemgate_hash_payload(PG_FUNCTION_ARGS)
{
	RequireArg(fcinfo, 0, "payload");
	PG_RETURN_BYTEA_P(HashJsonbPayload(PG_GETARG_JSONB_P(0)));
}
