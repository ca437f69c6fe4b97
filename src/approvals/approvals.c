/*-------------------------------------------------------------------------
 *
 * src/approvals/approvals.c
 *	  The approval gate: request_approval, hash_token, peek_approval,
 *	  consume_approval and expire_approvals.
 *
 * Design note. A token is 32 bytes from OpenSSL's CSPRNG, encoded as 43
 * base64url characters and returned once by request_approval; only its
 * SHA-256 is stored (approvals.token_hash), so a copy of the database does
 * not hold a usable link. Each approval remembers the run version it put in
 * awaiting_human (run_version): it can only be decided while the run is
 * still awaiting_human at exactly that version, so a token from an earlier
 * episode of a reinjected run can never approve a later one.
 *
 * Locks. Every path that touches both rows takes the approval row first,
 * then the run row:
 *   consume_approval  approval FOR UPDATE (checks in the WHERE), run FOR
 *                     UPDATE, then the seed's UPDATE marks it consumed;
 *   expire_approvals  approval FOR UPDATE SKIP LOCKED, run FOR UPDATE SKIP
 *                     LOCKED, so it never waits for a consume in flight;
 *   request_approval  locks only the run and inserts a new approval row.
 * Ten concurrent consumers of one token queue on the approval row; the
 * first consumes it, the others re-check the WHERE against the consumed
 * row and see nothing: exactly one approved, the rest invalid. The run is
 * checked before the approval is marked consumed, so a failed check
 * changes nothing and no subtransaction is needed; any error rolls back
 * the whole call (consume, run transition and outbox insert together).
 *
 * consume_approval never says which check failed: unknown, garbage,
 * expired, used, wrong decision, approver outside the audience, approver
 * equal to requested_by and run no longer waiting all give the same
 * "invalid" row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "approvals/approvals.h"
#include "citus/distributed.h"
#include "citus/shard_buckets.h"
#include "core/args.h"
#include "core/crypto.h"
#include "ledger/dead_letters.h"
#include "core/doc_limits.h"
#include "policy/effect_policies.h"
#include "outbox/effects.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "core/identity.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_request_approval);
PG_FUNCTION_INFO_V1(idemgate_hash_token);
PG_FUNCTION_INFO_V1(idemgate_peek_approval);
PG_FUNCTION_INFO_V1(idemgate_consume_approval);
PG_FUNCTION_INFO_V1(idemgate_expire_approvals);

#define MAX_SUBJECT_BYTES IDEMGATE_MAX_NAME_BYTES
#define MAX_REASON_BYTES IDEMGATE_MAX_REASON_BYTES
/* How many expired approvals one expire_approvals call handles. */
#define EXPIRE_BATCH 1000

/*
 * The card shown to the approver always carries the key and the absolute
 * expiry (two items of the seed's checklist), whatever the caller sent.
 */
static SavedStatement insert_approval_stmt = {
	"INSERT INTO idemgate.approvals (approval_id, idempotency_key, token_hash,"
	"  allowed_decisions, audience, requested_by, expires_at, card, effects, "
	"run_version/*@bucket_col*/)"
	" VALUES ($1, $2, $3, '{approve,reject}'::pg_catalog.text[], $4, $5,"
	"  pg_catalog.now() OPERATOR(pg_catalog.+) $6,"
	"  COALESCE($7, '{}'::pg_catalog.jsonb) OPERATOR(pg_catalog.||)"
	"    pg_catalog.jsonb_build_object('idempotency_key', $2,"
	"      'expires_at', pg_catalog.now() OPERATOR(pg_catalog.+) $6),"
	"  $8, $9/*@bucket_val*/)"
	" RETURNING expires_at /*@route $2*/",
	9, {UUIDOID, TEXTOID, BYTEAOID, TEXTARRAYOID, TEXTOID, INTERVALOID, JSONBOID,
		JSONBOID, INT8OID}
};

static SavedStatement peek_stmt = {
	"SELECT a.approval_id, a.idempotency_key,"
	"  CASE WHEN a.consumed_at IS NOT NULL THEN 'consumed'"
	"       WHEN a.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now() THEN 'expired'"
	"       WHEN EXISTS (SELECT 1 FROM idemgate.runs r"
	"                    WHERE r.idempotency_key OPERATOR(pg_catalog.=) "
	"a.idempotency_key/*@join r a*//*@bucket r*/"
	"                      AND r.state OPERATOR(pg_catalog.=) 'awaiting_human'"
	"                      AND r.version OPERATOR(pg_catalog.=) a.run_version)"
	"       THEN 'pending'"
	"       ELSE 'expired' END,"
	"  a.allowed_decisions, a.expires_at, a.card, a.effects"
	" FROM idemgate.approvals a "
	"WHERE a.token_hash OPERATOR(pg_catalog.=) $1/*@bucket a*//*@route $2*/",
	2, {BYTEAOID, INT4OID}
};

/*
 * The seed's conditions, as a locking read: the approval row is taken
 * first. The approver's checks (audience, requester) compare normalised
 * identities, in C (ApproverAllowed), on the locked row.
 */
static SavedStatement lock_approval_stmt = {
	"SELECT approval_id, idempotency_key, run_version, effects, audience, requested_by"
	" FROM idemgate.approvals"
	" WHERE token_hash OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $4*/"
	"   AND consumed_at IS NULL"
	"   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.now()"
	"   AND $2 OPERATOR(pg_catalog.=) ANY (allowed_decisions)"
	" FOR UPDATE",
	4, {BYTEAOID, TEXTOID, TEXTOID, INT4OID}
};

/* The seed's atomic consume, on the row already locked above. */
static SavedStatement consume_stmt = {
	"UPDATE idemgate.approvals"
	" SET consumed_at = pg_catalog.now(), decision = $2, approver_subject = $3"
	" WHERE approval_id OPERATOR(pg_catalog.=) $4/*@bucket*//*@route $4*/"
	"   AND token_hash OPERATOR(pg_catalog.=) $1"
	"   AND consumed_at IS NULL"
	"   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.now()"
	"   AND $2 OPERATOR(pg_catalog.=) ANY (allowed_decisions)"
	" RETURNING pg_catalog.date_part('epoch', consumed_at OPERATOR(pg_catalog.-) created_at)",
	4, {BYTEAOID, TEXTOID, TEXTOID, UUIDOID}
};

static SavedStatement expired_stmt = {
	"SELECT a.approval_id, a.idempotency_key, a.run_version, a.expires_at"
	" FROM idemgate.approvals a"
	" WHERE a.consumed_at IS NULL"
	"   AND a.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND EXISTS (SELECT 1 FROM idemgate.runs r"
	"               WHERE r.idempotency_key OPERATOR(pg_catalog.=) "
	"a.idempotency_key/*@join r a*//*@buckets r*/"
	"                 AND r.state OPERATOR(pg_catalog.=) 'awaiting_human'"
	"                 AND r.version OPERATOR(pg_catalog.=) a.run_version)/*@buckets a*/"
	" ORDER BY a.expires_at LIMIT " CppAsString2(EXPIRE_BATCH)
	" FOR UPDATE OF a SKIP LOCKED",
	0, {InvalidOid}
};

static SavedStatement lock_for_cancel_stmt = {
	"SELECT idempotency_key, run_version,"
	"       consumed_at IS NULL AND expires_at OPERATOR(pg_catalog.>) pg_catalog.now()"
	" FROM idemgate.approvals WHERE approval_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ "
	"FOR UPDATE",
	1, {UUIDOID}
};

static SavedStatement cancel_approval_stmt = {
	"UPDATE idemgate.approvals"
	" SET consumed_at = pg_catalog.now(), decision = 'cancelled', approver_subject = $2"
	" WHERE approval_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	2, {UUIDOID, TEXTOID}
};

static SavedStatement lock_run_skip_stmt = {
	"SELECT state, version, payload, failures FROM idemgate.runs"
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ "
	"FOR UPDATE SKIP LOCKED",
	1, {TEXTOID}
};

/*
 * TokenBucketParam sets *value to the bucket a token carries (a routing
 * parameter, src/citus/distributed.c) and returns its null flag: 'n' for a
 * token without one on a single node.
 */
static char
TokenBucketParam(text *token, bytea *token_hash, Datum *value)
{
	int			bucket = TokenBucket(VARDATA_ANY(token), VARSIZE_ANY_EXHDR(token));

	/* a token made before distribute(): its bucket is read from the row */
	if (bucket < 0 && IdemgateIsDistributed())
		bucket = LegacyTokenBucket(token_hash);
	*value = Int32GetDatum(bucket);
	return bucket >= 0 ? ' ' : 'n';
}

/* TokenHash returns the SHA-256 of a token's bytes. */
static bytea *
TokenHash(text *token)
{
	return Sha256Bytea(VARDATA_ANY(token), VARSIZE_ANY_EXHDR(token));
}

/* OptionalSubject returns an optional identity argument (1..IDEMGATE_MAX_NAME_BYTES), or NULL. */
static char *
OptionalSubject(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		return NULL;
	return text_to_cstring(TextArg(fcinfo, argno, name, MAX_SUBJECT_BYTES));
}

/*
 * AudienceArg checks the optional audience: NULL (any approver) or a
 * non-empty array of non-empty subjects, not only the requester.
 */
static ArrayType *
AudienceArg(FunctionCallInfo fcinfo, int argno, const char *requested_by,
			StringInfo json)
{
	ArrayType  *audience;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	bool		someone_else = false;

	if (PG_ARGISNULL(argno))
		return NULL;
	audience = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(audience) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"audience\" must be a one-dimensional array")));
	deconstruct_array(audience, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"audience\" must not be empty"),
				 errhint("Pass NULL to let any approver decide, "
						 "or list the approvers' subjects.")));
	appendStringInfoChar(json, '[');
	for (int i = 0; i < n; i++)
	{
		char	   *subject;

		if (nulls[i] || VARSIZE_ANY_EXHDR(DatumGetTextPP(elems[i])) == 0 ||
			VARSIZE_ANY_EXHDR(DatumGetTextPP(elems[i])) > MAX_SUBJECT_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"audience\" must hold subjects of 1 to %d bytes; "
							"element %d does not",
							MAX_SUBJECT_BYTES, i + 1)));
		subject = TextDatumGetCString(elems[i]);
		if (requested_by == NULL || !SameIdentity(subject, requested_by))
			someone_else = true;
		if (i > 0)
			appendStringInfoString(json, ", ");
		escape_json(json, subject);
	}
	appendStringInfoChar(json, ']');
	if (!someone_else)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"audience\" names only the requester \"%s\"", requested_by),
				 errdetail("The requester may not approve its own request, "
						   "so nobody could decide it."),
				 errhint("Add another approver to \"audience\".")));
	return audience;
}

/*
 * ApproverAllowed applies separation of duties and the audience to a
 * locked approval: the approver must not be the requester and, when an
 * audience is set, must be in it — identities compared normalised
 * (src/core/identity.c), so case, surrounding spaces, invisible format
 * characters and Unicode composition do not make a second person; the
 * requester's look-alikes are the requester, but only an exact (folded)
 * member of the audience is in it.
 */
static bool
ApproverAllowed(const char *approver, ArrayType *audience, const char *requested_by)
{
	char	   *who;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (requested_by != NULL && SameIdentity(approver, requested_by))
		return false;
	if (audience == NULL)
		return true;
	who = AudienceForm(approver, strlen(approver));
	deconstruct_array(audience, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		text	   *member;

		if (nulls[i])
			continue;
		member = DatumGetTextPP(elems[i]);
		if (strcmp(who, AudienceForm(VARDATA_ANY(member), VARSIZE_ANY_EXHDR(member))) == 0)
			return true;
	}
	return false;
}

/* JsonbNumber returns a jsonb number from its text. */
static Jsonb *
JsonbNumber(const char *digits)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(digits)));
}

/*
 * CardIdentity copies the identity fields of a card into event details:
 * which model and workflow drafted the request and where it came from,
 * never the model output itself.
 */
static void
CardIdentity(EventDetails *details, Jsonb *card)
{
	static const char *const audited[] = {
		"model", "model_version", "workflow_version", "source_url", NULL
	};
	JsonbValue *errors;

	if (card == NULL)
		return;
	for (int i = 0; audited[i] != NULL; i++)
	{
		JsonbValue *v = getKeyJsonValueFromContainer(&card->root, audited[i],
													 strlen(audited[i]), NULL);

		if (v != NULL && v->type == jbvString)
			DetailsText(details, audited[i], pnstrdup(v->val.string.val, v->val.string.len));
	}
	errors = getKeyJsonValueFromContainer(&card->root, "validation_errors",
										  strlen("validation_errors"), NULL);
	if (errors != NULL && errors->type == jbvBinary &&
		JsonContainerIsArray(errors->val.binary.data))
		DetailsInt(details, "validation_error_count",
				   JsonContainerSize(errors->val.binary.data));
}

/* TimestampJson renders a timestamptz as JSON text (ISO 8601). */
static char *
TimestampJson(Datum ts)
{
	return JsonEncodeDateTime(NULL, ts, TIMESTAMPTZOID, NULL);
}

/*
 * InsertApproval stores a new approval of run key, which the caller just
 * moved to awaiting_human at run_version; see approvals.h.
 */
void
InsertApproval(text *key, int64 run_version, Jsonb *effects, int effect_count,
			   Interval *expires_in, Jsonb *card, ArrayType *audience,
			   const char *audience_json, const char *requested_by,
			   EventDetails *details, NewApproval *out)
{
	uint8		raw[IDEMGATE_TOKEN_BYTES];
	char	   *token;
	pg_uuid_t  *approval_id = RandomUuid();
	int			bucket = IdemgateIsDistributed() ?
		KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) : -1;
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	Datum		expires_at;

	RandomBytes(raw, sizeof(raw));
	token = Base64UrlEncode(raw, sizeof(raw));
	explicit_bzero(raw, sizeof(raw));
	if (bucket >= 0)
	{
		/* Distributed: the id and the token name the bucket (src/citus/distributed.c). */
		StampUuidBucket(approval_id, bucket);
		token = psprintf("%s.%04x", token, bucket);
	}

	values[0] = UUIDPGetDatum(approval_id);
	values[1] = PointerGetDatum(key);
	values[2] = PointerGetDatum(Sha256Bytea(token, strlen(token)));
	SetPointerParam(values, nulls, 3, audience);
	SetTextParam(values, nulls, 4, requested_by);
	values[5] = IntervalPGetDatum(expires_in);
	SetPointerParam(values, nulls, 6, card);
	values[7] = JsonbPGetDatum(effects);
	values[8] = Int64GetDatum(run_version);
	expires_at = ExecSavedValue(&insert_approval_stmt, values, nulls, false,
								SPI_OK_INSERT_RETURNING, "could not insert approval", &isnull);

	DetailsText(details, "approval_id",
				DatumGetCString(DirectFunctionCall1(uuid_out, values[0])));
	DetailsText(details, "expires_at", TimestampJson(expires_at));
	DetailsInt(details, "effect_count", effect_count);
	DetailsText(details, "requested_by", requested_by);
	if (audience)
		DetailsJsonb(details, "audience",
					 DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(audience_json))));
	CardIdentity(details, card);
	RecordEvent(key, NULL, "approval_requested", requested_by, DetailsFinish(details));

	out->approval_id = approval_id;
	out->token = token;
	out->expires_at = expires_at;
}

/*
 * idemgate_request_approval implements request_approval(key, owner,
 * version, effects, expires_in, card, audience, requested_by). As the live
 * owner of a processing run, it moves the run to awaiting_human, stores the
 * approval with the token's hash, and returns the raw token once. A row of
 * NULLs when ownership was lost; IG002 from any other state. The effect
 * types' policies apply (requires_requester, src/policy/effect_policies.c).
 */
Datum
idemgate_request_approval(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	pg_uuid_t  *owner;
	int64		version;
	Jsonb	   *effects;
	ParsedEffect *parsed;
	int			effect_count;
	Interval   *expires_in;
	Jsonb	   *card = NULL;
	ArrayType  *audience;
	int			audience_count = -1;
	char	   *requested_by;
	StringInfoData audience_json;
	OwnedRun	run;
	int64		new_version;
	EventDetails details;
	ReturnSetInfo *rsinfo;
	Datum		row[4] = {0, 0, 0, 0};
	bool		rownulls[4] = {true, true, true, true};

	owner = REQUIRED_ARG(1, "owner", UUID_P);
	version = REQUIRED_ARG(2, "version", INT64);
	effects = DocumentArg(fcinfo, 3, "effects");
	effect_count = ParseEffects(effects, "effects", &parsed);
	expires_in = IntervalArg(fcinfo, 4, "expires_in", 0, IDEMGATE_MAX_APPROVAL_EXPIRY_USECS,
							 "An approval must expire, at most 30 days after it is requested.");
	if (!PG_ARGISNULL(5))
	{
		CheckDocumentArg(fcinfo, 5, "card");
		card = PG_GETARG_JSONB_P(5);
		if (!JB_ROOT_IS_OBJECT(card))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"card\" must be a JSON object"),
					 errhint("See the Approvals section of the README for what an approval card "
							 "should hold.")));
	}
	requested_by = OptionalSubject(fcinfo, 7, "requested_by");
	if (!PG_ARGISNULL(6))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(6);

		audience_count = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	}

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	/* The types' policies first: requires_requester is 22004 (NULL). */
	CheckRequesterPolicy(parsed, effect_count, requested_by, audience_count);
	initStringInfo(&audience_json);
	audience = AudienceArg(fcinfo, 6, requested_by, &audience_json);

	/* One event: the request and the state change it makes. */
	DetailsInit(&details);
	new_version = MoveOwnedProcessingRun(key, owner, version, "awaiting_human", &details, &run);
	if (new_version < 0 && run.found && run.owned)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("illegal transition of run \"%s\" from %s to awaiting_human",
						text_to_cstring(key), run.state),
				 errdetail("request_approval only applies to a run that is processing.")));
	if (new_version >= 0)
	{
		NewApproval approval;

		InsertApproval(key, new_version, effects, effect_count, expires_in, card, audience,
					   audience_json.data, requested_by, &details, &approval);
		row[0] = UUIDPGetDatum(approval.approval_id);
		row[1] = CStringGetTextDatum(approval.token);
		row[2] = approval.expires_at;
		row[3] = Int64GetDatum(new_version);
		rownulls[0] = rownulls[1] = rownulls[2] = rownulls[3] = false;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	SPI_finish();
	return (Datum) 0;
}

/* idemgate_hash_token returns the SHA-256 of the token's bytes. */
Datum
idemgate_hash_token(PG_FUNCTION_ARGS)
{
	RequireArg(fcinfo, 0, "token");
	PG_RETURN_BYTEA_P(TokenHash(PG_GETARG_TEXT_PP(0)));
}

/*
 * RefuseRequestAsToken: n8n's `SELECT * FROM idemgate.peek_approval($1)`
 * without ::jsonb resolves to the typed form (text wins over jsonb for an
 * untyped parameter), which would look up the whole request as a token and
 * return no row, as for an unknown token. No token begins with '{'. The
 * message never shows the argument: it holds a token.
 */
static void
RefuseRequestAsToken(text *token)
{
	const char *p = VARDATA_ANY(token);
	const char *end = p + VARSIZE_ANY_EXHDR(token);

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p < end && *p == '{')
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("peek_approval was given a JSON request as its token"),
				 errdetail("peek_approval(token text) would look the whole request up as a token; "
						   "PostgreSQL picks that form for a text or untyped parameter."),
				 errhint("Cast the parameter: SELECT * FROM idemgate.peek_approval($1::jsonb).")));
}

/*
 * idemgate_peek_approval implements peek_approval(token): what the GET
 * confirmation page shows. Read-only; zero rows for an unknown (or
 * garbage) token. status is consumed, expired (past expires_at, or its run
 * stopped waiting for it) or pending.
 */
Datum
idemgate_peek_approval(PG_FUNCTION_ARGS)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	ReturnSetInfo *rsinfo;

	RequireArg(fcinfo, 0, "token");
	RefuseRequestAsToken(PG_GETARG_TEXT_PP(0));
	values[0] = PointerGetDatum(TokenHash(PG_GETARG_TEXT_PP(0)));
	nulls[1] = TokenBucketParam(PG_GETARG_TEXT_PP(0), DatumGetByteaPP(values[0]), &values[1]);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	ExecSavedExpect(&peek_stmt, values, nulls, true, 1, SPI_OK_SELECT, "approval look-up failed");
	PutResultRows(rsinfo, 7);	/* at most one row: count 1 */
	SPI_finish();
	return (Datum) 0;
}

/*
 * idemgate_consume_approval implements consume_approval(token, decision,
 * approver, reason): exactly one row. approve → run approved and every
 * effect in the outbox; reject → run failed_terminal with the rejection in
 * its result (a decision, not a failure: no dead letter); anything else →
 * invalid, nothing changed, no hint which check failed.
 */
Datum
idemgate_consume_approval(PG_FUNCTION_ARGS)
{
	text	   *token;
	text	   *decision;
	char	   *decision_str;
	char	   *approver;
	char	   *reason = NULL;
	Datum		values[4];
	bool		isnull;
	ReturnSetInfo *rsinfo;
	Datum		row[3] = {0, 0, 0};
	bool		rownulls[3] = {false, true, true};
	const char *outcome = "invalid";
	char		nulls[4] = {' ', ' ', ' ', ' '};

	token = REQUIRED_ARG(0, "token", TEXT_PP);
	decision = REQUIRED_ARG(1, "decision", TEXT_PP);
	decision_str = text_to_cstring(decision);
	approver = text_to_cstring(TextArg(fcinfo, 2, "approver", MAX_SUBJECT_BYTES));
	if (!PG_ARGISNULL(3))
		reason = text_to_cstring(TextArg(fcinfo, 3, "reason", MAX_REASON_BYTES));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();

	values[0] = PointerGetDatum(TokenHash(token));
	values[1] = PointerGetDatum(decision);
	values[2] = CStringGetTextDatum(approver);
	nulls[3] = TokenBucketParam(token, DatumGetByteaPP(values[0]), &values[3]);
	ExecSavedExpect(&lock_approval_stmt, values, nulls, false, 1, SPI_OK_SELECT,
					"approval look-up failed");
	if (SPI_processed == 1)
	{
		pg_uuid_t  *approval_id = DatumGetUUIDP(GetResultDatum(0, 1, &isnull));
		text	   *key = DatumGetTextPP(GetResultDatum(0, 2, &isnull));
		int64		run_version = DatumGetInt64(GetResultDatum(0, 3, &isnull));
		Jsonb	   *effects = DatumGetJsonbP(GetResultDatum(0, 4, &isnull));
		Datum		audience_datum = GetResultDatum(0, 5, &isnull);
		ArrayType  *audience = isnull ? NULL : DatumGetArrayTypeP(audience_datum);
		Datum		requested_datum = GetResultDatum(0, 6, &isnull);
		char	   *requested_by = isnull ? NULL : TextDatumGetCString(requested_datum);
		bool		approve = strcmp(decision_str, "approve") == 0;
		bool		reject = strcmp(decision_str, "reject") == 0;
		EventDetails details;

		/*
		 * The run must still await this approval, at the version the request
		 * put it in; the test and the decision's state change are one
		 * statement. One event: the decision and the state change it makes.
		 * An approver who may not decide gets invalid, like any other check.
		 */
		DetailsInit(&details);
		if ((approve || reject) && ApproverAllowed(approver, audience, requested_by))
		{
			Jsonb	   *rejection = NULL;

			if (reject)
				rejection = DecisionResult("reject", "approver", approver, reason);
			if (TryMoveRun(key, NULL, run_version, "awaiting_human",
						   approve ? "approved" : "failed_terminal", rejection, &details) >= 0)
				outcome = approve ? "approved" : "rejected";
		}

		if (strcmp(outcome, "invalid") != 0)
		{
			float8		wait_seconds;
			char	   *approval_text =
				DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(approval_id)));

			values[3] = UUIDPGetDatum(approval_id);
			wait_seconds = DatumGetFloat8(ExecSavedValue(&consume_stmt, values, NULL, false,
														 SPI_OK_UPDATE_RETURNING,
														 "locked approval could not be consumed",
														 &isnull));

			if (approve)
				row[2] = PointerGetDatum(InsertEffects(key, effects, false, approver, NULL));
			else
				row[2] = PointerGetDatum(construct_empty_array(UUIDOID));

			DetailsText(&details, "approval_id", approval_text);
			DetailsText(&details, "decision", decision_str);
			DetailsJsonb(&details, "wait_seconds", JsonbNumber(psprintf("%.3f", wait_seconds)));
			DetailsText(&details, "reason", reason);
			RecordEvent(key, NULL, "approval_decided", approver, DetailsFinish(&details));

			row[1] = PointerGetDatum(key);
			rownulls[1] = rownulls[2] = false;
		}
	}
	row[0] = CStringGetTextDatum(outcome);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	SPI_finish();
	return (Datum) 0;
}

static int	ExpireApprovalsIn(Datum buckets);

/* ExpireApprovals fails runs whose approval expired undecided; see approvals.h. */
int
ExpireApprovals(void)
{
	ListCell   *lc;
	int			expired = 0;

	/* On Citus the locking scan runs one shard at a time (src/citus/shard_buckets.c). */
	if (IdemgateIsDistributed())
	{
		List	   *sets = ShardBucketSets(SHARDS_SCAN);

		if (!AnyShardHasWork(sets, SHARD_EXPIRED_APPROVALS))
			return 0;
		foreach(lc, sets)
		{
			Datum		buckets = ShardBucketsWithWork(lfirst(lc), SHARD_EXPIRED_APPROVALS);

			if (buckets != (Datum) 0)
				expired += ExpireApprovalsIn(buckets);
		}
		return expired;
	}
	return ExpireApprovalsIn((Datum) 0);
}

/*
 * ExpireApprovalsIn is ExpireApprovals on the shard whose buckets are the
 * int4[] buckets, or everywhere when buckets is 0.
 */
static int
ExpireApprovalsIn(Datum buckets)
{
	SPITupleTable *candidates;
	uint64		n;
	int			expired = 0;

	if (ExecSavedInBuckets(&expired_stmt, NULL, NULL, false, 0, buckets) != SPI_OK_SELECT)
		elog(ERROR, "expired approval look-up failed");
	candidates = SPI_tuptable;
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		approval_id = SPI_getbinval(candidates->vals[i], candidates->tupdesc,
												1, &isnull);
		text	   *key = DatumGetTextPP(SPI_getbinval(candidates->vals[i], candidates->tupdesc,
													   2, &isnull));
		int64		run_version = DatumGetInt64(SPI_getbinval(candidates->vals[i],
															  candidates->tupdesc, 3, &isnull));
		Datum		expires_at = SPI_getbinval(candidates->vals[i], candidates->tupdesc,
											   4, &isnull);
		char	   *approval_text = DatumGetCString(DirectFunctionCall1(uuid_out, approval_id));
		char	   *expires_text = TimestampJson(expires_at);
		Datum		runkey[1];
		Jsonb	   *payload;
		int32		failures;
		EventDetails result;
		EventDetails details;

		runkey[0] = PointerGetDatum(key);
		ExecSavedExpect(&lock_run_skip_stmt, runkey, NULL, false, 1, SPI_OK_SELECT,
						"run look-up failed");
		if (SPI_processed != 1)
			continue;			/* busy: the next call will see it */
		if (strcmp(TextDatumGetCString(GetResultDatum(0, 1, &isnull)), "awaiting_human") != 0 ||
			DatumGetInt64(GetResultDatum(0, 2, &isnull)) != run_version)
			continue;			/* the run moved on meanwhile */
		{
			Datum		d = GetResultDatum(0, 3, &isnull);

			payload = isnull ? NULL : DatumGetJsonbP(d);
		}
		failures = DatumGetInt32(GetResultDatum(0, 4, &isnull)) + 1;

		DetailsInit(&result);
		DetailsText(&result, "error_class", "approval_expired");
		DetailsText(&result, "approval_id", approval_text);
		DetailsText(&result, "expires_at", expires_text);
		/* One event: the expiry and the state change it makes. */
		DetailsInit(&details);
		MoveRunState(key, "awaiting_human", "failed_terminal", DetailsFinish(&result), true,
					 &details);
		RecordDeadLetter("run", key, NULL, NULL, payload, "approval_expired",
						 psprintf("approval %s expired undecided at %s", approval_text,
								  expires_text),
						 failures);

		DetailsText(&details, "approval_id", approval_text);
		DetailsText(&details, "expires_at", expires_text);
		RecordEvent(key, NULL, "approval_expired", NULL, DetailsFinish(&details));
		expired++;
	}
	return expired;
}

/* idemgate_expire_approvals implements expire_approvals(): how many runs it failed. */
Datum
idemgate_expire_approvals(PG_FUNCTION_ARGS)
{
	int			expired;

	ConnectSPI();
	expired = ExpireApprovals();
	SPI_finish();
	PG_RETURN_INT32(expired);
}

/*
 * LockApproval locks approval_id's row for cancel_approval and tells its
 * run, the run's version when it was requested, and whether it is still
 * undecided and unexpired; false when there is no such approval. Must be
 * called inside SPI.
 */
bool
LockApproval(pg_uuid_t *approval_id, text **key, int64 *run_version, bool *open)
{
	Datum		value = UUIDPGetDatum(approval_id);
	bool		isnull;

	if (!ExecSavedFind(&lock_for_cancel_stmt, value, "could not lock approval"))
		return false;
	*key = DatumGetTextPCopy(GetResultDatum(0, 1, &isnull));
	*run_version = DatumGetInt64(GetResultDatum(0, 2, &isnull));
	*open = DatumGetBool(GetResultDatum(0, 3, &isnull));
	return true;
}

/* CancelLockedApproval decides a locked approval as cancelled by actor. */
void
CancelLockedApproval(pg_uuid_t *approval_id, const char *actor)
{
	Datum		values[2];

	values[0] = UUIDPGetDatum(approval_id);
	values[1] = CStringGetTextDatum(actor);
	ExecSavedOneRow(&cancel_approval_stmt, values, NULL, false, 0, SPI_OK_UPDATE,
					"could not cancel approval");
}

/* DecisionResult builds a run's result of a decision; see approvals.h. */
Jsonb *
DecisionResult(const char *decision, const char *by_key, const char *by, const char *reason)
{
	EventDetails result;

	DetailsInit(&result);
	DetailsText(&result, "decision", decision);
	DetailsText(&result, by_key, by);
	DetailsText(&result, "reason", reason);
	return DetailsFinish(&result);
}
