/*-------------------------------------------------------------------------
 *
 * src/ledger/run_claim.c
 *	  The claim of a run: the claim statement (insert, or take over a
 *	  retryable run or an expired lease), the answers for a key it did not
 *	  take (duplicate, payload mismatch, purged), the Citus whole-transaction
 *	  claim, and claim_lease, the seed's own statement. One of the three
 *	  files of the runs table's writer (runs.c, run_claim.c,
 *	  run_completion.c); claim()'s entry points are src/ledger/claim_calls.c.
 *
 * Design note. Ownership changes hands in exactly one place, the claim
 * statement here (src/ledger/runs.c says why that is enough); a new key or
 * a held one is answered without SQL where the table allows
 * (src/ledger/claim_direct.c).
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
	" VALUES ($1, $2, 'processing', $3, $4, $5, pg_catalog.now() + $6, pg_catalog.now(), $7, "
	"$8/*@bucket_val*/)"
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
			 errdetail("The payload hash differs from the one stored when the key was "
					   "first claimed."),
			 errhint("Stop and investigate: a changed business input under the same key hides "
					 "upstream corruption. Use idemgate.supersede() for an intended correction.")));
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
 * (sql/functions/claim_in_bucket.sql): one call of claim_in_bucket,
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
	SetPointerParam(values, nulls, 4, workflow);
	SetPointerParam(values, nulls, 5, owner);
	SetPointerParam(values, nulls, 6, origin);

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
	SetPointerParam(values, nulls, 1, workflow);
	values[2] = PointerGetDatum(hash);
	values[3] = JsonbPGetDatum(payload);
	values[4] = UUIDPGetDatum(run.owner);
	values[5] = IntervalPGetDatum(lease);
	SetPointerParam(values, nulls, 6, replaces_key);
	SetPointerParam(values, nulls, 7, origin);
	lookup[0] = PointerGetDatum(key);

	/*
	 * Between a conflict and the look-up, the row can only disappear through
	 * purge; then the next round inserts it again.
	 */
	for (int round = 0; round < 3; round++)
	{
		bool		isnull;

		ExecSavedExpect(ClaimStatement(), values, nulls, false, 0, SPI_OK_INSERT_RETURNING,
						"claim statement failed");
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
						 errmsg("could not claim key \"%s\": it was purged concurrently",
								text_to_cstring(key)),
						 errhint("Retry the call: it answers duplicate with state purged.")));
			if (version > 0)
				RecordTakeover(key, hash, origin, actor);
			return;
		}

		ExecSavedExpect(&existing_run_stmt, lookup, NULL, false, 1, SPI_OK_SELECT,
						"run look-up failed");
		if (SPI_processed == 0)
			continue;

		ClaimExisting(key, hash, workflow, actor, origin, out);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not claim key \"%s\": it was removed concurrently",
					text_to_cstring(key)),
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

	hash = REQUIRED_ARG(1, "payload_hash", BYTEA_PP);
	if (VARSIZE_ANY_EXHDR(hash) != IDEMGATE_SHA256_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"payload_hash\" must be a 32-byte SHA-256 digest, not %d bytes",
						(int) VARSIZE_ANY_EXHDR(hash)),
				 errhint("Compute it with idemgate.hash_payload(payload).")));
	owner = REQUIRED_ARG(2, "owner", UUID_P);
	lease = LeaseArg(fcinfo, 3, "lease");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	values[0] = PointerGetDatum(key);
	values[1] = values[3] = values[6] = values[7] = (Datum) 0;
	values[2] = PointerGetDatum(hash);
	values[4] = UUIDPGetDatum(owner);
	values[5] = IntervalPGetDatum(lease);
	ExecSavedExpect(ClaimStatement(), values, nulls, false, 0, SPI_OK_INSERT_RETURNING,
					"claim statement failed");
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

