/*-------------------------------------------------------------------------
 *
 * src/outbox.c
 *	  The pull API for effects (claim_effects, complete_effect,
 *	  fail_effect) and the shared C entry points CompleteEffect,
 *	  FailEffect and SettleExpiredLeases that the dispatcher uses too.
 *
 * Design note. An effect moves through these states:
 *
 *	pending --claim--> sending --complete--> completed
 *	   ^                  |  \--fail: rejected, or retries exhausted--> failed
 *	   |                  |   \-fail: timeout_after_send/server_error--> unknown
 *	   +--fail: retryable-+    (retryable instead when the endpoint
 *	      (with backoff)        honours the Idempotency-Key)
 *
 * plus operator actions (src/deadletters.c): failed --reinject--> pending,
 * unknown --resolve_effect--> completed | pending.
 *
 * Locks. A claim locks due pending rows with FOR UPDATE SKIP LOCKED and
 * marks them sending in the same statement, so concurrent claimers never get
 * the same effect. Every later step is a compare-and-set on (effect_id,
 * lease_owner, state = 'sending') under the row lock: whoever changed the
 * row first wins, the other sees zero rows and is told the lease was lost.
 * A lease that expired but was not settled yet may still be completed or
 * failed by its owner: the send really happened, and only the settle step
 * (run before every claim) turns an expired lease into unknown (or pending
 * with backoff for endpoints that honour the key).
 *
 * Completing a run. After an effect is completed its run row is locked
 * (always effect first, then run, the same order everywhere) and a fresh
 * snapshot checks whether any effect of the run is still not completed.
 * Two effects of one run completing at once serialise on the run lock, so
 * the second one sees the first committed and completes the run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "args.h"
#include "backoff.h"
#include "crypto.h"
#include "deadletters.h"
#include "effect_types.h"
#include "events.h"
#include "guc.h"
#include "idemgate.h"
#include "killswitch.h"
#include "outbox.h"
#include "pull_grants.h"
#include "runs.h"
#include "spi_util.h"

PG_FUNCTION_INFO_V1(idemgate_claim_effects);
PG_FUNCTION_INFO_V1(idemgate_complete_effect);
PG_FUNCTION_INFO_V1(idemgate_fail_effect);

/* Attempts allowed when the effect's type has no registered endpoint. */
#define DEFAULT_MAX_ATTEMPTS 3
/* Longest lease claim_effects hands out. */
#define MAX_EFFECT_LEASE_USECS ((int64) SECS_PER_HOUR * USECS_PER_SEC)
/* Expired leases settled per call (the rest on the next call). */
#define SETTLE_BATCH 1000

/* What a failure of a given class does to the effect. */
typedef enum FailKind
{
	FAIL_RETRY,					/* never reached the provider: retry with backoff */
	FAIL_MAYBE_SENT,			/* may have happened: unknown, unless the key is honoured */
	FAIL_REJECT					/* the provider said no: failed + dead letter */
} FailKind;

typedef struct ErrorClass
{
	const char *name;
	FailKind	kind;
	bool		internal;		/* only the settle step uses it */
} ErrorClass;

static const ErrorClass error_classes[] = {
	{"transport", FAIL_RETRY, false},
	{"rate_limited", FAIL_RETRY, false},
	{"unavailable", FAIL_RETRY, false},
	{"timeout_after_send", FAIL_MAYBE_SENT, false},
	{"server_error", FAIL_MAYBE_SENT, false},
	{"rejected", FAIL_REJECT, false},
	{"lease_expired", FAIL_MAYBE_SENT, true},
	{NULL, FAIL_REJECT, false}
};

#define ERROR_CLASS_HINT "The error classes are transport, rate_limited, unavailable, timeout_after_send, server_error and rejected."

static SavedStatement claim_stmt = {
	"WITH due AS ("
	" SELECT o.effect_id FROM idemgate.outbox o"
	" WHERE o.effect_type OPERATOR(pg_catalog.=) $1 AND o.state OPERATOR(pg_catalog.=) 'pending'"
	"   AND o.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (SELECT r.state FROM idemgate.runs r"
	"        WHERE r.idempotency_key OPERATOR(pg_catalog.=) o.idempotency_key)"
	"       OPERATOR(pg_catalog.=) 'approved'"
	" ORDER BY o.next_attempt_at"
	" LIMIT $2"
	" FOR UPDATE OF o SKIP LOCKED"
	")"
	" UPDATE idemgate.outbox o"
	" SET state = 'sending', attempts = o.attempts OPERATOR(pg_catalog.+) 1,"
	"     lease_owner = $3, lease_expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) $4,"
	"     updated_at = pg_catalog.now()"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	" RETURNING o.effect_id, o.idempotency_key, o.effect_type, o.target, o.payload,"
	"           o.attempts, o.lease_owner",
	4, {TEXTOID, INT4OID, UUIDOID, INTERVALOID}, GENERIC_PLAN
};

/*
 * Completing effects, one statement for a whole batch: each effect of $1
 * still held by its owner (same position in $2) becomes completed with its
 * provider id and status ($3, $4). The row itself is the record of the
 * delivery (state, provider_id, last_status, attempts, updated_at: a
 * completed effect never changes again); idemgate.key_history shows it as
 * an effect_completed entry, so no event row is written (issue 12).
 * effect_id = ANY keeps this an index scan of outbox_pkey whatever plan
 * the plan cache picks; "IS TRUE" hides the state test from the planner,
 * which would otherwise AND in a scan of the whole outbox_sending_idx
 * (dead entries included). The same statement then locks the approved runs
 * of those effects as lock_runs_stmt does (rows with a NULL effect_id),
 * so that complete_runs_stmt, in the next statement's fresh snapshot, sees
 * a sibling effect completed by a transaction that held the run's lock.
 */
static SavedStatement complete_stmt = {
	"WITH done AS ("
	" UPDATE idemgate.outbox o"
	" SET state = 'completed',"
	"     provider_id = ($3::pg_catalog.text[])[pg_catalog.array_position($1, o.effect_id)],"
	"     last_status = ($4::pg_catalog.int4[])[pg_catalog.array_position($1, o.effect_id)],"
	"     last_error = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND (o.state OPERATOR(pg_catalog.=) 'sending') IS TRUE"
	"   AND o.lease_owner OPERATOR(pg_catalog.=) ($2::pg_catalog.uuid[])[pg_catalog.array_position($1, o.effect_id)]"
	" RETURNING o.effect_id, o.idempotency_key"
	"), locked AS ("
	" SELECT r.idempotency_key FROM idemgate.runs r"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT d.idempotency_key FROM done d))"
	"   AND r.state OPERATOR(pg_catalog.=) 'approved'"
	" ORDER BY r.idempotency_key FOR UPDATE OF r"
	")"
	" SELECT d.effect_id, d.idempotency_key FROM done d"
	" UNION ALL"
	" SELECT NULL, l.idempotency_key FROM locked l",
	4, {UUIDARRAYOID, UUIDARRAYOID, TEXTARRAYOID, INT4ARRAYOID}, GENERIC_PLAN
};

static SavedStatement lock_sending_stmt = {
	"SELECT o.idempotency_key, o.effect_type, o.target, o.payload, o.attempts,"
	"       e.max_attempts, e.honors_idempotency_key"
	" FROM idemgate.outbox o"
	" LEFT JOIN idemgate.endpoints e ON e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1 AND o.lease_owner OPERATOR(pg_catalog.=) $2"
	"   AND o.state OPERATOR(pg_catalog.=) 'sending'"
	" FOR UPDATE OF o",
	2, {UUIDOID, UUIDOID}
};

static SavedStatement fail_update_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = $2,"
	"     next_attempt_at = CASE WHEN $3::interval IS NULL THEN next_attempt_at"
	"                            ELSE pg_catalog.now() OPERATOR(pg_catalog.+) $3 END,"
	"     last_status = $4, last_error = $5, lease_expires_at = NULL,"
	"     updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1"
	" RETURNING next_attempt_at",
	5, {UUIDOID, TEXTOID, INTERVALOID, INT4OID, TEXTOID}
};

static SavedStatement dead_letter_target_stmt = {
	"UPDATE idemgate.dead_letters SET target = $2 WHERE id OPERATOR(pg_catalog.=) $1",
	2, {INT8OID, TEXTOID}
};

/*
 * Completing runs, in two statements for a batch of keys. First lock the
 * approved runs, in key order (two batches never deadlock): a sibling
 * effect completing at the same time in another transaction serialises
 * here. Then, in a fresh snapshot taken after the locks (so the sibling's
 * commit is seen), complete those with no open effect, storing
 * {"effects": [...]} when the run has no result of its own (NULL, or the
 * failure record fail() left before the run was recovered: SPEC §13). The
 * run row records this change itself (a run with effects only ever
 * completes here, and a completed run never changes again):
 * idemgate.key_history shows it as a state_changed entry, so no event row
 * is written (issue 12).
 */
static SavedStatement lock_runs_stmt = {
	"SELECT r.idempotency_key FROM idemgate.runs r"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND r.state OPERATOR(pg_catalog.=) 'approved'"
	" ORDER BY r.idempotency_key FOR UPDATE OF r",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

static SavedStatement complete_runs_stmt = {
	"UPDATE idemgate.runs r"
	" SET state = 'completed', version = r.version OPERATOR(pg_catalog.+) 1,"
	"     updated_at = pg_catalog.now(),"
	"     result = CASE WHEN r.result IS NULL"
	"                     OR (r.result OPERATOR(pg_catalog.?) 'error_class'"
	"                         AND r.result OPERATOR(pg_catalog.?) 'failures')"
	"              THEN (SELECT pg_catalog.jsonb_build_object('effects', COALESCE(pg_catalog.jsonb_agg("
	"                      pg_catalog.jsonb_build_object('effect_id', o.effect_id, 'effect_type', o.effect_type,"
	"                        'target', o.target, 'state', o.state, 'provider_id', o.provider_id)"
	"                      ORDER BY o.created_at, o.effect_type, o.target), '[]'::pg_catalog.jsonb))"
	"                    FROM idemgate.outbox o"
	"                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key)"
	"              ELSE r.result END"
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND r.state OPERATOR(pg_catalog.=) 'approved'"
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o"
	"                   WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key"
	"                     AND o.state OPERATOR(pg_catalog.<>) ALL ('{completed,cancelled}'::pg_catalog.text[]))",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

static SavedStatement expired_stmt = {
	"SELECT effect_id, lease_owner FROM idemgate.outbox"
	" WHERE state OPERATOR(pg_catalog.=) 'sending'"
	"   AND lease_expires_at OPERATOR(pg_catalog.<) pg_catalog.now()"
	"   AND ($1::text IS NULL OR effect_type OPERATOR(pg_catalog.=) $1)"
	" ORDER BY lease_expires_at LIMIT " CppAsString2(SETTLE_BATCH)
	" FOR UPDATE SKIP LOCKED",
	1, {TEXTOID}
};

/* FindErrorClass returns the entry for name, or NULL. */
static const ErrorClass *
FindErrorClass(const char *name, bool allow_internal)
{
	for (int i = 0; error_classes[i].name != NULL; i++)
		if (strcmp(name, error_classes[i].name) == 0 &&
			(allow_internal || !error_classes[i].internal))
			return &error_classes[i];
	return NULL;
}

/*
 * CompleteLockedRuns completes the runs of keys (a text[] datum), locked by
 * this transaction and approved when locked, that have no effect in another
 * state than completed or cancelled. Must be called inside SPI.
 */
static void
CompleteLockedRuns(Datum keys)
{
	if (ExecSaved(&complete_runs_stmt, &keys, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not complete runs");
}

/*
 * CompleteRunsIfDone completes the runs of keys (a text[] datum, repeats
 * allowed) that are approved and have no effect in another state than
 * completed or cancelled; see lock_runs_stmt. Must be called inside SPI,
 * after the effect rows were changed.
 */
static void
CompleteRunsIfDone(Datum keys)
{
	Datum		values[2];
	Datum	   *locked;
	int			n;

	values[0] = keys;
	if (ExecSaved(&lock_runs_stmt, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock runs");
	n = (int) SPI_processed;
	if (n == 0)
		return;
	locked = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		locked[i] = PointerGetDatum(DatumGetTextPCopy(GetResultDatum(i, 1, &isnull)));
	}
	CompleteLockedRuns(PointerGetDatum(construct_array(locked, n, TEXTOID, -1, false,
													   TYPALIGN_INT)));
}

/*
 * CompleteRunIfDone completes the run of key (approved → completed) when
 * none of its effects is in another state than completed or cancelled. A
 * run without a result of its own (NULL, or an earlier attempt's failure
 * record) gets {"effects": [{effect_id, effect_type, target, state,
 * provider_id}, ...]}, so a later duplicate has an answer. Locks the run
 * row, so it must be called after the effect row was changed. Must be
 * called inside SPI.
 */
void
CompleteRunIfDone(text *key)
{
	Datum		k = PointerGetDatum(key);

	CompleteRunsIfDone(PointerGetDatum(construct_array(&k, 1, TEXTOID, -1, false, TYPALIGN_INT)));
}

/* CompleteEffects records n successful deliveries; see outbox.h. */
int
CompleteEffects(int n, const pg_uuid_t *effect_ids, const pg_uuid_t *owners,
				char *const *provider_ids, const int *http_statuses, bool *completed)
{
	Datum	   *ids = palloc(sizeof(Datum) * n);
	Datum	   *own = palloc(sizeof(Datum) * n);
	Datum	   *pids = palloc(sizeof(Datum) * n);
	bool	   *pid_nulls = palloc(sizeof(bool) * n);
	Datum	   *sts = palloc(sizeof(Datum) * n);
	bool	   *st_nulls = palloc(sizeof(bool) * n);
	int			dims[1] = {n};
	int			lbs[1] = {1};
	Datum		values[4];
	uint64		rows;
	int			done = 0;
	int			nkeys = 0;
	Datum	   *keys;

	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++)
	{
		ids[i] = UUIDPGetDatum(unconstify(pg_uuid_t *, &effect_ids[i]));
		own[i] = UUIDPGetDatum(unconstify(pg_uuid_t *, &owners[i]));
		pid_nulls[i] = provider_ids[i] == NULL;
		pids[i] = pid_nulls[i] ? (Datum) 0 : CStringGetTextDatum(provider_ids[i]);
		st_nulls[i] = http_statuses[i] <= 0;
		sts[i] = Int32GetDatum(http_statuses[i]);
		completed[i] = false;
	}
	values[0] = PointerGetDatum(construct_array(ids, n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR));
	values[1] = PointerGetDatum(construct_array(own, n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR));
	values[2] = PointerGetDatum(construct_md_array(pids, pid_nulls, 1, dims, lbs,
												   TEXTOID, -1, false, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_md_array(sts, st_nulls, 1, dims, lbs,
												   INT4OID, sizeof(int32), true, TYPALIGN_INT));
	if (ExecSaved(&complete_stmt, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not complete effects");
	rows = SPI_processed;
	keys = palloc(sizeof(Datum) * (rows + 1));
	for (uint64 r = 0; r < rows; r++)
	{
		bool		isnull;
		Datum		id = GetResultDatum(r, 1, &isnull);

		if (isnull)
		{
			/* a run locked by the statement, approved when locked */
			keys[nkeys++] = PointerGetDatum(DatumGetTextPCopy(GetResultDatum(r, 2, &isnull)));
			continue;
		}
		done++;
		for (int i = 0; i < n; i++)
			if (memcmp(DatumGetUUIDP(id), &effect_ids[i], sizeof(pg_uuid_t)) == 0)
				completed[i] = true;
	}
	if (nkeys > 0)
		CompleteLockedRuns(PointerGetDatum(construct_array(keys, nkeys, TEXTOID, -1, false,
														   TYPALIGN_INT)));
	return done;
}

/* CompleteEffect records a successful delivery; see outbox.h. */
bool
CompleteEffect(pg_uuid_t *effect_id, pg_uuid_t *owner,
			   const char *provider_id, int http_status)
{
	char	   *pid = unconstify(char *, provider_id);
	bool		completed;

	return CompleteEffects(1, effect_id, owner, &pid, &http_status, &completed) == 1;
}

/*
 * FailLockedEffect records a failed attempt; see FailEffect. Lease-expired
 * settling uses the internal class lease_expired.
 */
static const char *
FailLockedEffect(pg_uuid_t *effect_id, pg_uuid_t *owner, const ErrorClass *ec,
				 const char *error, int64 retry_after_usecs, int http_status)
{
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	Datum		d;
	text	   *key;
	char	   *effect_type;
	char	   *target;
	Jsonb	   *payload;
	int			attempts;
	int			max_attempts;
	bool		honors;
	FailKind	kind;
	const char *new_state;
	int64		delay = -1;
	TimestampTz retry_at = 0;
	char	   *clipped = ClipErrorText(error);
	EventDetails details;

	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(owner);
	if (ExecSaved(&lock_sending_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock effect");
	if (SPI_processed == 0)
		return NULL;
	key = DatumGetTextPCopy(GetResultDatum(0, 1, &isnull));
	effect_type = TextDatumGetCString(GetResultDatum(0, 2, &isnull));
	target = TextDatumGetCString(GetResultDatum(0, 3, &isnull));
	payload = DatumGetJsonbPCopy(GetResultDatum(0, 4, &isnull));
	attempts = DatumGetInt32(GetResultDatum(0, 5, &isnull));
	d = GetResultDatum(0, 6, &isnull);
	max_attempts = isnull ? DEFAULT_MAX_ATTEMPTS : DatumGetInt32(d);
	d = GetResultDatum(0, 7, &isnull);
	honors = !isnull && DatumGetBool(d);

	kind = ec->kind;
	if (kind == FAIL_MAYBE_SENT && honors)
		kind = FAIL_RETRY;		/* the provider dedupes on Idempotency-Key */
	if (kind == FAIL_MAYBE_SENT)
		new_state = "unknown";
	else if (kind == FAIL_RETRY && attempts < max_attempts)
	{
		new_state = "pending";
		delay = BackoffUsecs(attempts, retry_after_usecs);
	}
	else
		new_state = "failed";

	values[1] = CStringGetTextDatum(new_state);
	values[2] = delay >= 0 ? IntervalPGetDatum(UsecsToInterval(delay)) : (Datum) 0;
	nulls[2] = delay >= 0 ? ' ' : 'n';
	values[3] = Int32GetDatum(http_status);
	nulls[3] = http_status > 0 ? ' ' : 'n';
	SetTextParam(values, nulls, 4, clipped);
	if (ExecSaved(&fail_update_stmt, values, nulls, false, 1) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record effect failure");
	retry_at = DatumGetTimestampTz(GetResultDatum(0, 1, &isnull));

	DetailsInit(&details);
	DetailsText(&details, "error_class", ec->name);
	if (http_status > 0)
		DetailsInt(&details, "status", http_status);
	DetailsInt(&details, "attempt", attempts);
	DetailsText(&details, "new_state", new_state);
	if (delay >= 0)
		DetailsText(&details, "retry_at",
					JsonEncodeDateTime(NULL, TimestampTzGetDatum(retry_at), TIMESTAMPTZOID, NULL));
	RecordEvent(key, effect_id, "effect_failed", NULL, DetailsFinish(&details));

	if (strcmp(new_state, "failed") == 0)
	{
		int64		id = RecordDeadLetter("effect", key, effect_id, effect_type, payload,
										  ec->name, clipped, attempts);
		Datum		dl[2];

		dl[0] = Int64GetDatum(id);
		dl[1] = CStringGetTextDatum(target);
		if (ExecSaved(&dead_letter_target_stmt, dl, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record dead letter target");
	}
	return new_state;
}

/* FailEffect records a failed attempt; see outbox.h. */
const char *
FailEffect(pg_uuid_t *effect_id, pg_uuid_t *owner, const char *error_class,
		   const char *error, int64 retry_after_usecs, int http_status)
{
	const ErrorClass *ec = FindErrorClass(error_class, false);

	if (ec == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown effect error class \"%s\"", TruncateForMessage(error_class)),
				 errhint(ERROR_CLASS_HINT)));
	return FailLockedEffect(effect_id, owner, ec, error, retry_after_usecs, http_status);
}

/*
 * SettleExpiredLeases turns sending effects whose lease expired (a crashed
 * or stuck worker) into unknown, or back to pending with backoff when the
 * endpoint honours the Idempotency-Key (failed + dead letter once attempts
 * are exhausted), recording effect_failed with error_class lease_expired.
 * Only effects of effect_type when it is not NULL. Rows another session is
 * settling are skipped. Returns how many were settled. Must be called
 * inside SPI.
 */
int
SettleExpiredLeases(const char *effect_type)
{
	const ErrorClass *ec = FindErrorClass("lease_expired", true);
	Datum		values[1];
	char		nulls[1] = {' '};
	uint64		n;
	pg_uuid_t  *ids;
	pg_uuid_t  *owners;
	int			settled = 0;

	SetTextParam(values, nulls, 0, effect_type);
	if (ExecSaved(&expired_stmt, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not find expired effect leases");
	n = SPI_processed;
	if (n == 0)
		return 0;
	ids = palloc(sizeof(pg_uuid_t) * n);
	owners = palloc(sizeof(pg_uuid_t) * n);
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		memcpy(&ids[i], DatumGetUUIDP(GetResultDatum(i, 1, &isnull)), sizeof(pg_uuid_t));
		memcpy(&owners[i], DatumGetUUIDP(GetResultDatum(i, 2, &isnull)), sizeof(pg_uuid_t));
	}
	for (uint64 i = 0; i < n; i++)
	{
		const char *state = FailLockedEffect(&ids[i], &owners[i], ec,
											 "lease expired before the outcome was recorded",
											 -1, 0);

		if (state != NULL)
			settled++;
	}
	return settled;
}

/* EffectTypeArg returns the required effect_type argument, checked. */
static char *
EffectTypeArg(FunctionCallInfo fcinfo, int argno)
{
	return text_to_cstring(TextArg(fcinfo, argno, "effect_type", IDEMGATE_MAX_NAME_BYTES));
}

/* StatusArg returns an optional HTTP status argument (0 when NULL). */
static int
StatusArg(FunctionCallInfo fcinfo, int argno)
{
	int			status;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return 0;
	status = PG_GETARG_INT32(argno);
	if (status < 100 || status > 599)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"status\" must be an HTTP status between 100 and 599, not %d",
						status),
				 errhint("Pass NULL when there was no HTTP response.")));
	return status;
}

/*
 * idemgate_claim_effects implements claim_effects(effect_type, batch,
 * lease): settles expired leases of the type, then, unless the kill switch
 * is off or the type is paused, marks up to batch due pending effects of approved runs sending
 * under one fresh lease owner and returns them.
 */
Datum
idemgate_claim_effects(PG_FUNCTION_ARGS)
{
	char	   *effect_type = EffectTypeArg(fcinfo, 0);
	int32		batch;
	Interval   *lease;
	ReturnSetInfo *rsinfo;
	Datum		values[4];

	RequireArg(fcinfo, 1, "batch");
	batch = PG_GETARG_INT32(1);
	if (batch < 1 || batch > 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"batch\" must be between 1 and 1000, not %d", batch)));
	lease = IntervalArg(fcinfo, 2, "lease", 0, MAX_EFFECT_LEASE_USECS,
						"Send within the lease, or claim fewer effects per call.");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	CheckPullAllowed(effect_type);
	SettleExpiredLeases(effect_type);
	if (!ActionsEnabled() || EffectTypePaused(effect_type))
	{
		SPI_finish();
		return (Datum) 0;
	}

	values[0] = CStringGetTextDatum(effect_type);
	values[1] = Int32GetDatum(batch);
	values[2] = UUIDPGetDatum(RandomUuid());
	values[3] = IntervalPGetDatum(lease);
	if (ExecSaved(&claim_stmt, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim effects");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		row[7];
		bool		rownulls[7];

		for (int c = 0; c < 7; c++)
			row[c] = GetResultDatum(i, c + 1, &rownulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * idemgate_complete_effect implements complete_effect(effect_id, owner,
 * provider_id, status): true when the effect was completed, false when the
 * lease was lost.
 */
Datum
idemgate_complete_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	pg_uuid_t  *owner;
	char	   *provider_id = NULL;
	int			status;
	bool		done;

	RequireArg(fcinfo, 0, "effect_id");
	effect_id = PG_GETARG_UUID_P(0);
	RequireArg(fcinfo, 1, "owner");
	owner = PG_GETARG_UUID_P(1);
	if (!PG_ARGISNULL(2))
		provider_id = text_to_cstring(TextArg(fcinfo, 2, "provider_id", IDEMGATE_MAX_PROVIDER_ID_BYTES));
	status = StatusArg(fcinfo, 3);

	ConnectSPI();
	CheckPullAllowedForEffect(effect_id);
	done = CompleteEffect(effect_id, owner, provider_id, status);
	SPI_finish();
	PG_RETURN_BOOL(done);
}

/*
 * idemgate_fail_effect implements fail_effect(effect_id, owner,
 * error_class, error, retry_after, status): the effect's new state, or
 * NULL when the lease was lost.
 */
Datum
idemgate_fail_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	pg_uuid_t  *owner;
	char	   *error_class;
	char	   *error = NULL;
	int64		retry_after = -1;
	int			status;
	const char *new_state;

	RequireArg(fcinfo, 0, "effect_id");
	effect_id = PG_GETARG_UUID_P(0);
	RequireArg(fcinfo, 1, "owner");
	owner = PG_GETARG_UUID_P(1);
	RequireArg(fcinfo, 2, "error_class");
	error_class = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (FindErrorClass(error_class, false) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"error_class\" must be a known error class, not \"%s\"",
						TruncateForMessage(error_class)),
				 errhint(ERROR_CLASS_HINT)));
	if (!PG_ARGISNULL(3))
		error = text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (!PG_ARGISNULL(4))
	{
		retry_after = IntervalToUsecs(PG_GETARG_INTERVAL_P(4));
		if (retry_after < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_after\" must not be negative"),
					 errhint("Pass the Retry-After header as an interval, or NULL when there was none.")));
	}
	status = StatusArg(fcinfo, 5);

	ConnectSPI();
	CheckPullAllowedForEffect(effect_id);
	new_state = FailEffect(effect_id, owner, error_class, error, retry_after, status);
	SPI_finish();
	if (new_state == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(new_state));
}
