/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox.c
 *	  The outbox table: every statement by which an effect enters it or
 *	  changes state, for the API (enqueue, claim_effects, complete, fail,
 *	  cancel, reinject, resolve); the dispatcher's own claim is
 *	  src/outbox/outbox_dispatch.c.
 *
 * Design note. An effect moves through these states:
 *
 *	pending --claim--> sending --complete--> completed
 *	   ^                  |  \--fail: rejected, or retries exhausted--> failed
 *	   |                  |   \-fail: timeout_after_send/lost_after_send/server_error--> unknown
 *	   +--fail: retryable-+    (retryable instead when the endpoint
 *	      (with backoff)        honours the Idempotency-Key)
 *
 * plus operator actions (src/operations/reinject.c, src/operations/cancel.c): failed --reinject-->
 * pending, pending|unknown --cancel--> cancelled,
 * unknown --resolve_effect--> completed | pending.
 *
 * Inserting. An effect is recorded in the same transaction that decides
 * it may happen, under the run's row lock (src/outbox/effects.c,
 * src/approvals/approvals.c); UNIQUE (idempotency_key, effect_type, target) with ON
 * CONFLICT DO NOTHING makes a re-enqueue return the existing effect.
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
 * (always effect first, then run, the same order everywhere) and a
 * snapshot taken after that lock, whatever the transaction's isolation
 * level (src/ledger/run_completion.c, CompleteLockedRuns), checks whether any effect of the
 * run is still not completed. Two effects of one run completing at once
 * serialise on the run lock, so the second one sees the first committed
 * and completes the run, also in REPEATABLE READ and SERIALIZABLE
 * transactions whose own snapshot is older than the first one's commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
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

#include "core/args.h"
#include "core/backoff.h"
#include "core/crypto.h"
#include "ledger/dead_letters.h"
#include "core/dispatcher_wake.h"
#include "policy/effect_types.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "citus/distributed.h"
#include "outbox/outbox.h"
#include "citus/local_shards.h"
#include "citus/shard_buckets.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

/* Attempts allowed when the effect's type has no registered endpoint. */
#define DEFAULT_MAX_ATTEMPTS 3
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
	{"lost_after_send", FAIL_MAYBE_SENT, false},
	{"server_error", FAIL_MAYBE_SENT, false},
	{"rejected", FAIL_REJECT, false},
	{"lease_expired", FAIL_MAYBE_SENT, true},
	{NULL, FAIL_REJECT, false}
};

/* Due pending effects of type $1 (of approved runs), oldest first, $2 at most, locked. */
#define DUE_OF_TYPE \
	" SELECT o.effect_id FROM idemgate.outbox o" \
	" WHERE o.effect_type OPERATOR(pg_catalog.=) $1 AND o.state OPERATOR(pg_catalog.=) 'pending'" \
	"   AND o.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()/*@buckets o*/" \
	"   AND (SELECT r.state FROM idemgate.runs r" \
	"        WHERE r.idempotency_key OPERATOR(pg_catalog.=) " \
	"o.idempotency_key/*@join r o*//*@buckets r*/)" \
	"       OPERATOR(pg_catalog.=) 'approved'" \
	" ORDER BY o.next_attempt_at" \
	" LIMIT $2" \
	" FOR UPDATE OF o SKIP LOCKED"

/* Lease them to $3 for $4. */
#define LEASE_TO_PULLER \
	" UPDATE idemgate.outbox o" \
	" SET state = 'sending', attempts = o.attempts OPERATOR(pg_catalog.+) 1," \
	"     lease_owner = $3, lease_expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) $4," \
	"     updated_at = pg_catalog.now()"

#define PULLED_COLUMNS \
	" RETURNING o.effect_id, o.idempotency_key, o.effect_type, o.target, o.payload," \
	"           o.attempts, o.lease_owner"

static SavedStatement claim_stmt = {
	"WITH due AS (" DUE_OF_TYPE ")"
	LEASE_TO_PULLER
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	PULLED_COLUMNS,
	4, {TEXTOID, INT4OID, UUIDOID, INTERVALOID}, GENERIC_PLAN
};

/*
 * The claim on Citus, on one shard's buckets, in two statements of one
 * transaction (as the dispatcher's, src/outbox/outbox_dispatch.c): as one, Citus
 * ran the CTE as a subplan shipped through a connection.
 */
static SavedStatement due_of_type_stmt = {
	DUE_OF_TYPE,
	2, {TEXTOID, INT4OID}
};
static SavedStatement lease_to_puller_stmt = {
	LEASE_TO_PULLER
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($5)/*@buckets o*/"
	"   AND o.state OPERATOR(pg_catalog.=) 'pending'"	/* outbox_dispatch.c */
	PULLED_COLUMNS,
	5, {TEXTOID, INT4OID, UUIDOID, INTERVALOID, UUIDARRAYOID}
};

/*
 * The end of both completions: after the CTE done (the completed effects),
 * lock their runs still approved, in key order, and return the effects,
 * then the locked runs' keys with a NULL effect.
 */
#define COMPLETED_AND_LOCKED_RUNS_SQL \
	"), locked AS (" \
	" SELECT r.idempotency_key FROM idemgate.runs r" \
	" WHERE r.idempotency_key OPERATOR(pg_catalog.=) ANY " \
	"(ARRAY(SELECT d.idempotency_key FROM done d))/*@bucket r*/" \
	"   AND (r.state OPERATOR(pg_catalog.=) 'approved') IS TRUE" \
	" ORDER BY r.idempotency_key FOR UPDATE OF r" \
	")" \
	" SELECT d.effect_id, d.idempotency_key FROM done d" \
	" UNION ALL" \
	" SELECT NULL, l.idempotency_key FROM locked l"

/*
 * Completing effects, one statement for a whole batch: each effect of $1
 * still held by its owner (same position in $2) becomes completed with its
 * provider id and status ($3, $4). The row itself is the record of the
 * delivery (state, provider_id, last_status, attempts, updated_at: a
 * completed effect never changes again); idemgate.key_history shows it as
 * an effect_completed entry, so no event row is written (bench/README.md).
 * effect_id = ANY keeps this an index scan of outbox_pkey whatever plan
 * the plan cache picks; "IS TRUE" hides the state test from the planner,
 * which would otherwise AND in a scan of the whole outbox_sending_idx
 * (dead entries included). The same statement then locks the approved runs
 * of those effects as lock_runs_stmt does (rows with a NULL effect_id),
 * so that complete_runs_stmt, in a snapshot taken after these locks, sees
 * a sibling effect completed by a transaction that held the run's lock.
 */
static SavedStatement complete_stmt = {
	"WITH done AS ("
	" UPDATE idemgate.outbox o"
	" SET state = 'completed',"
	"     provider_id = ($3::pg_catalog.text[])[pg_catalog.array_position($1, o.effect_id)],"
	"     last_status = ($4::pg_catalog.int4[])[pg_catalog.array_position($1, o.effect_id)],"
	"     last_error = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($1)/*@bucket o*//*@route $1*/"
	"   AND (o.state OPERATOR(pg_catalog.=) 'sending') IS TRUE"
	"   AND o.lease_owner OPERATOR(pg_catalog.=) "
	"($2::pg_catalog.uuid[])[pg_catalog.array_position($1, o.effect_id)]"
	" RETURNING o.effect_id, o.idempotency_key"
	COMPLETED_AND_LOCKED_RUNS_SQL,
	4, {UUIDARRAYOID, UUIDARRAYOID, TEXTARRAYOID, INT4ARRAYOID}, GENERIC_PLAN
};

/*
 * complete_stmt for one effect, with scalar parameters: on Citus each
 * completion is its own statement (its effect's shard), and Citus cannot
 * deparse complete_stmt's array subscripts in SET for local execution.
 */
static SavedStatement complete_one_stmt = {
	"WITH done AS ("
	" UPDATE idemgate.outbox o"
	" SET state = 'completed', provider_id = $3, last_status = $4,"
	"     last_error = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/"
	"   AND (o.state OPERATOR(pg_catalog.=) 'sending') IS TRUE"
	"   AND o.lease_owner OPERATOR(pg_catalog.=) $2"
	" RETURNING o.effect_id, o.idempotency_key"
	COMPLETED_AND_LOCKED_RUNS_SQL,
	4, {UUIDOID, UUIDOID, TEXTOID, INT4OID}
};
static SavedStatement lock_sending_stmt = {
	"SELECT o.idempotency_key, o.effect_type, o.target, o.payload, o.attempts,"
	"       e.max_attempts, e.honors_idempotency_key"
	" FROM idemgate.outbox o"
	" LEFT JOIN idemgate.endpoints e ON e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/ "
	"AND o.lease_owner OPERATOR(pg_catalog.=) $2"
	"   AND o.state OPERATOR(pg_catalog.=) 'sending'"
	" FOR UPDATE OF o",
	2, {UUIDOID, UUIDOID}
};

static SavedStatement fail_update_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = $2,"
	"     next_attempt_at = COALESCE($3, next_attempt_at),"
	"     last_status = $4, last_error = $5, lease_expires_at = NULL,"
	"     updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/"
	" RETURNING next_attempt_at",
	5, {UUIDOID, TEXTOID, TIMESTAMPTZOID, INT4OID, TEXTOID}
};

static SavedStatement expired_stmt = {
	"SELECT effect_id, lease_owner FROM idemgate.outbox"
	" WHERE state OPERATOR(pg_catalog.=) 'sending'"
	"   AND lease_expires_at OPERATOR(pg_catalog.<) pg_catalog.now()"
	"   AND ($1::text IS NULL OR effect_type OPERATOR(pg_catalog.=) $1)/*@buckets outbox*/"
	"   AND ($2::pg_catalog.int4 IS NULL"
	"        OR lease_expires_at OPERATOR(pg_catalog.<) (pg_catalog.now()"
	"           OPERATOR(pg_catalog.-) '" CppAsString2(IDEMGATE_FOREIGN_LEASE_GRACE_SECS)
	" seconds'::pg_catalog.interval)"
	"        OR NOT ((pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 6) "
	"OPERATOR(pg_catalog.&) 240) OPERATOR(pg_catalog.=) 128"
	"                AND pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 7) "
	"OPERATOR(pg_catalog.=) " CppAsString2(DISPATCHER_LEASE_MARKER) ")"
	"        OR pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 9) "
	"OPERATOR(pg_catalog.*) 256"
	"           OPERATOR(pg_catalog.+) pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 10)"
	"           OPERATOR(pg_catalog.=) $2)"
	" ORDER BY lease_expires_at LIMIT " CppAsString2(SETTLE_BATCH)
	" FOR UPDATE SKIP LOCKED",
	2, {TEXTOID, INT4OID}
};

/*
 * INSERT_EFFECT_SQL is the effect's insert with more columns and their
 * values (each with a leading comma) after next_attempt_at.
 */
#define INSERT_EFFECT_SQL(columns, values) \
	"INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload," \
	"                             next_attempt_at" columns "/*@bucket_col*/)" \
	" VALUES ($1, $2, $3, $4, $5, GREATEST($6, pg_catalog.now())" values "/*@bucket_val*/)" \
	" ON CONFLICT (idempotency_key, effect_type, target/*@bucket_col*/) DO NOTHING" \
	" RETURNING effect_id /*@route $2*/"

static SavedStatement insert_effect_stmt = {
	INSERT_EFFECT_SQL("", ""),
	6, {UUIDOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID}
};

/*
 * The same for an automatic effect held for a cancel window (its type's
 * policy, src/policy/effect_policies.c): the window ends when it becomes due.
 * A separate statement, so that the usual insert never names the 1.2
 * column cancel_until (the library also serves older schemas until
 * ALTER EXTENSION UPDATE, README.md "Upgrading").
 */
static SavedStatement insert_windowed_effect_stmt = {
	INSERT_EFFECT_SQL(", cancel_until", ", GREATEST($6, pg_catalog.now())"),
	6, {UUIDOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID}
};

static SavedStatement existing_effect_stmt = {
	"SELECT effect_id FROM idemgate.outbox"
	" WHERE idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/"
	"   AND effect_type OPERATOR(pg_catalog.=) $2"
	"   AND target OPERATOR(pg_catalog.=) $3",
	3, {TEXTOID, TEXTOID, TEXTOID}
};

/* FindErrorClass returns the entry for name, or NULL. */
static const ErrorClass *
FindErrorClass(const char *name, bool allow_internal);

/* IsErrorClass tells whether name is an error class callers may use. */
bool
IsErrorClass(const char *name)
{
	return FindErrorClass(name, false) != NULL;
}

static const ErrorClass *
FindErrorClass(const char *name, bool allow_internal)
{
	for (int i = 0; error_classes[i].name != NULL; i++)
		if (strcmp(name, error_classes[i].name) == 0 &&
			(allow_internal || !error_classes[i].internal))
			return &error_classes[i];
	return NULL;
}

static int	CompleteEffectRows(SavedStatement *stmt, Datum *values, const char *nulls, int n,
							   const pg_uuid_t *effect_ids, bool *completed, int shard_bucket);

/*
 * BatchValues sets complete_stmt's four array parameters to the m effects
 * of the batch at positions idx (all n in order when idx is NULL).
 */
static void
BatchValues(Datum *values, const int *idx, int m, const pg_uuid_t *effect_ids,
			const pg_uuid_t *owners, char *const *provider_ids, const int *http_statuses)
{
	Datum	   *ids = palloc(sizeof(Datum) * m);
	Datum	   *own = palloc(sizeof(Datum) * m);
	Datum	   *pids = palloc(sizeof(Datum) * m);
	bool	   *pid_nulls = palloc(sizeof(bool) * m);
	Datum	   *sts = palloc(sizeof(Datum) * m);
	bool	   *st_nulls = palloc(sizeof(bool) * m);
	int			dims[1] = {m};
	int			lbs[1] = {1};

	for (int k = 0; k < m; k++)
	{
		int			i = idx ? idx[k] : k;

		ids[k] = UUIDPGetDatum(unconstify(pg_uuid_t *, &effect_ids[i]));
		own[k] = UUIDPGetDatum(unconstify(pg_uuid_t *, &owners[i]));
		pid_nulls[k] = provider_ids[i] == NULL;
		pids[k] = pid_nulls[k] ? (Datum) 0 : CStringGetTextDatum(provider_ids[i]);
		st_nulls[k] = http_statuses[i] <= 0;
		sts[k] = Int32GetDatum(http_statuses[i]);
	}
	values[0] = PointerGetDatum(construct_array(ids, m, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR));
	values[1] = PointerGetDatum(construct_array(own, m, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR));
	values[2] = PointerGetDatum(construct_md_array(pids, pid_nulls, 1, dims, lbs,
												   TEXTOID, -1, false, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_md_array(sts, st_nulls, 1, dims, lbs,
												   INT4OID, sizeof(int32), true, TYPALIGN_INT));
}

/*
 * CompleteEffectsByShard records on Citus the effects of the batch whose
 * shard is placed on this node, one complete_stmt per shard on the
 * shard's own tables (src/citus/local_shards.c), as one node does for its
 * whole batch; sets done[i] for each effect it handled. Returns how many
 * it completed.
 */
static int
CompleteEffectsByShard(int n, const pg_uuid_t *effect_ids, const pg_uuid_t *owners,
					   char *const *provider_ids, const int *http_statuses, bool *completed,
					   bool *done)
{
	int		   *shard = palloc(sizeof(int) * n);
	int		   *idx = palloc(sizeof(int) * n);
	pg_uuid_t  *group_ids = palloc(sizeof(pg_uuid_t) * n);
	bool	   *group_completed = palloc(sizeof(bool) * n);
	int			total = 0;

	for (int i = 0; i < n; i++)
	{
		int			bucket = UuidBucket(&effect_ids[i]);

		shard[i] = bucket >= 0 ? LocalShardFor(bucket) : -1;
		done[i] = false;
	}
	for (int i = 0; i < n; i++)
	{
		Datum		values[4];
		int			m = 0;
		int			rc;

		if (done[i] || shard[i] < 0)
			continue;
		for (int j = i; j < n; j++)
			if (!done[j] && shard[j] == shard[i])
			{
				idx[m] = j;
				group_ids[m] = effect_ids[j];
				m++;
			}
		BatchValues(values, idx, m, effect_ids, owners, provider_ids, http_statuses);
		rc = CompleteEffectRows(&complete_stmt, values, NULL, m, group_ids, group_completed,
								UuidBucket(&effect_ids[i]));
		if (rc < 0)
		{
			for (int k = 0; k < m; k++)
				shard[idx[k]] = -1; /* one by one, through Citus */
			continue;
		}
		total += rc;
		for (int k = 0; k < m; k++)
		{
			done[idx[k]] = true;
			completed[idx[k]] = group_completed[k];
		}
	}
	return total;
}

/* CompleteEffects records n successful deliveries; see outbox.h. */
int
CompleteEffects(int n, const pg_uuid_t *effect_ids, const pg_uuid_t *owners,
				char *const *provider_ids, const int *http_statuses, bool *completed)
{
	Datum		values[4];
	int			done = 0;

	if (n <= 0)
		return 0;

	/*
	 * On Citus the effects of the shards placed here one statement per
	 * shard; the others one statement per effect, on its shard
	 * (complete_one_stmt).
	 */
	if (IdemgateIsDistributed())
	{
		bool	   *handled = palloc(sizeof(bool) * n);

		done = CompleteEffectsByShard(n, effect_ids, owners, provider_ids, http_statuses,
									  completed, handled);
		for (int i = 0; i < n; i++)
		{
			Datum		one[4];
			char		one_nulls[4] = {' ', ' ', ' ', ' '};

			if (handled[i])
				continue;
			one[0] = UUIDPGetDatum(unconstify(pg_uuid_t *, &effect_ids[i]));
			one[1] = UUIDPGetDatum(unconstify(pg_uuid_t *, &owners[i]));
			SetTextParam(one, one_nulls, 2, provider_ids[i]);
			one[3] = Int32GetDatum(http_statuses[i]);
			one_nulls[3] = http_statuses[i] <= 0 ? 'n' : ' ';
			done += CompleteEffectRows(&complete_one_stmt, one, one_nulls, 1,
									   &effect_ids[i], &completed[i], -1);
		}
		return done;
	}
	BatchValues(values, NULL, n, effect_ids, owners, provider_ids, http_statuses);
	return CompleteEffectRows(&complete_stmt, values, NULL, n, effect_ids, completed, -1);
}

/*
 * CompleteEffectRows runs a completion statement (complete_stmt or
 * complete_one_stmt) for the n effect_ids, marks which completed, and
 * completes the runs it locked; returns how many effects it completed.
 * With shard_bucket >= 0 the statement runs on this node's shard of that
 * bucket, where all the effects lie (ExecSavedOnShard), and -1 is
 * returned, nothing done, when it cannot.
 */
static int
CompleteEffectRows(SavedStatement *stmt, Datum *values, const char *nulls, int n,
				   const pg_uuid_t *effect_ids, bool *completed, int shard_bucket)
{
	uint64		rows;
	int			done = 0;
	int			nkeys = 0;
	Datum	   *keys;
	int			rc;

	for (int i = 0; i < n; i++)
		completed[i] = false;
	if (shard_bucket >= 0)
	{
		rc = ExecSavedOnShard(stmt, values, nulls, false, 0, false, shard_bucket);
		if (rc < 0)
			return -1;
	}
	else
		rc = ExecSaved(stmt, values, nulls, false, 0);
	if (rc != SPI_OK_SELECT)
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
	{
		Datum		locked = PointerGetDatum(construct_array(keys, nkeys, TEXTOID, -1, false,
															 TYPALIGN_INT));

		if (shard_bucket >= 0)
			CompleteLockedRunsOnShard(locked, shard_bucket);
		else
			CompleteLockedRuns(locked);
	}
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
				 const char *error, int64 retry_after_usecs, int http_status, int flags)
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
	/* The last attempt failed while the circuit is open: it waits for the circuit. */
	if (kind == FAIL_RETRY && attempts >= max_attempts && (flags & FAIL_HOLD_LAST))
		max_attempts = attempts + 1;
	if (flags & FAIL_NOW)
		new_state = "failed";
	else if (kind == FAIL_MAYBE_SENT)
		new_state = "unknown";
	else if (kind == FAIL_RETRY && attempts < max_attempts &&
			 retry_after_usecs > RetryAfterLimitUsecs())
	{
		/* Honoured up to the limit, never retried early: a person decides. */
		new_state = "failed";
		clipped = ClipErrorText(psprintf("%s (Retry-After %s is longer than the %s a retry "
										 "may wait; reinject it once the provider is ready)",
										 clipped ? clipped : ec->name,
										 FormatUsecs(retry_after_usecs),
										 FormatUsecs(RetryAfterLimitUsecs())));
	}
	else if (kind == FAIL_RETRY && attempts < max_attempts)
	{
		new_state = "pending";
		delay = BackoffUsecs(attempts, retry_after_usecs);
	}
	else
		new_state = "failed";

	values[1] = CStringGetTextDatum(new_state);
	/*
	 * The next attempt's time as a value (now() + delay): Citus refuses
	 * now() inside CASE or COALESCE in an UPDATE.
	 */
	values[2] = delay >= 0 ?
		DirectFunctionCall2(timestamptz_pl_interval,
							TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
							IntervalPGetDatum(UsecsToInterval(delay))) : (Datum) 0;
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

		SetDeadLetterTarget(id, target);
		/* Its run ends failed_terminal if nothing else of it is open. */
		CompleteRunIfDone(key);
	}
	return new_state;
}

static SavedStatement open_effects_stmt = {
	"SELECT 1 FROM idemgate.outbox o"
	" WHERE o.idempotency_key OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/"
	"   AND o.state OPERATOR(pg_catalog.=) ANY ('{pending,sending,unknown}'::pg_catalog.text[])"
	" LIMIT 1",
	1, {TEXTOID}
};

/* RunHasOpenEffects; see outbox.h. Must be called inside SPI. */
bool
RunHasOpenEffects(text *key)
{
	Datum		value = PointerGetDatum(key);

	if (ExecSaved(&open_effects_stmt, &value, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the run's effects");
	return SPI_processed > 0;
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
	return FailLockedEffect(effect_id, owner, ec, error, retry_after_usecs, http_status, 0);
}

/* FailEffectWith records a failed attempt with flags; see outbox.h. */
const char *
FailEffectWith(pg_uuid_t *effect_id, pg_uuid_t *owner, const char *error_class,
			   const char *error, int64 retry_after_usecs, int http_status, int flags)
{
	const ErrorClass *ec = FindErrorClass(error_class, false);

	if (ec == NULL)
		elog(ERROR, "unknown effect error class \"%s\"", error_class);
	return FailLockedEffect(effect_id, owner, ec, error, retry_after_usecs, http_status, flags);
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
/*
 * SettleExpiredLeasesByShard is SettleExpiredLeases on Citus: the locking
 * scan runs one shard at a time (src/citus/shard_buckets.c).
 */
static int
SettleExpiredLeasesByShard(Datum *values, const char *nulls, const ErrorClass *ec)
{
	ListCell   *lc;
	int			settled = 0;
	List	   *sets = ShardBucketSets(SHARDS_SCAN);

	if (!AnyShardHasWork(sets, SHARD_EXPIRED_LEASES))
		return 0;
	foreach(lc, sets)
	{
		uint64		n;
		pg_uuid_t  *ids;
		pg_uuid_t  *owners;
		Datum		buckets = ShardBucketsWithWork(lfirst(lc), SHARD_EXPIRED_LEASES);

		if (buckets == (Datum) 0)
			continue;
		if (ExecSavedInBuckets(&expired_stmt, values, nulls, false, 0, buckets) != SPI_OK_SELECT)
			elog(ERROR, "could not find expired effect leases");
		n = SPI_processed;
		ids = palloc(sizeof(pg_uuid_t) * (n + 1));
		owners = palloc(sizeof(pg_uuid_t) * (n + 1));
		for (uint64 i = 0; i < n; i++)
		{
			bool		isnull;

			memcpy(&ids[i], DatumGetUUIDP(GetResultDatum(i, 1, &isnull)), sizeof(pg_uuid_t));
			memcpy(&owners[i], DatumGetUUIDP(GetResultDatum(i, 2, &isnull)), sizeof(pg_uuid_t));
		}
		for (uint64 i = 0; i < n; i++)
			if (FailLockedEffect(&ids[i], &owners[i], ec,
								 "lease expired before the outcome was recorded", -1, 0, 0) != NULL)
				settled++;
	}
	return settled;
}

int
SettleExpiredLeases(const char *effect_type)
{
	const ErrorClass *ec = FindErrorClass("lease_expired", true);
	Datum		values[2];
	char		nulls[2] = {' ', 'n'};
	uint64		n;
	pg_uuid_t  *ids;
	pg_uuid_t  *owners;
	int			settled = 0;

	SetTextParam(values, nulls, 0, effect_type);
	if (IdemgateIsDistributed())
	{
		/*
		 * Another node's dispatcher may still record its lease's outcome
		 * (a shard move held its write up): it gets a grace period.
		 */
		values[1] = Int32GetDatum(LocalGroupId());
		nulls[1] = ' ';
		return SettleExpiredLeasesByShard(values, nulls, ec);
	}
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
											 -1, 0, 0);

		if (state != NULL)
			settled++;
	}
	return settled;
}

/* ClaimEffectsOfType claims effects of one type; see outbox.h. */
void
ClaimEffectsOfType(const char *effect_type, int batch, pg_uuid_t *owner, Interval *lease,
				   ClaimedRowsReader take, void *arg)
{
	Datum		values[4];

	values[0] = CStringGetTextDatum(effect_type);
	values[1] = Int32GetDatum(batch);
	values[2] = UUIDPGetDatum(owner);
	values[3] = IntervalPGetDatum(lease);
	if (IdemgateIsDistributed())
	{
		static int	next_shard = 0;
		static const ShardClaim pull = {
			&due_of_type_stmt, &lease_to_puller_stmt, 1, SHARDS_SCAN, &next_shard
		};

		(void) ClaimShardByShard(&pull, values, batch, take, arg);
		return;
	}
	if (ExecSaved(&claim_stmt, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim effects");
	take(arg);
}

/* ClaimShardByShard claims on Citus one shard at a time; see outbox.h. */
uint64
ClaimShardByShard(const ShardClaim *claim, Datum *values, int limit,
				  ClaimedRowsReader take, void *arg)
{
	List	   *sets = ShardBucketSets(claim->which);
	int			n = list_length(sets);
	int			first = *claim->next_shard;
	int			ids_arg = claim->mark->nargs - 1;
	uint64		taken = 0;

	/* Idle: one look-up for this node's shards instead of one per shard. */
	if (!AnyShardHasWork(sets, (ShardWork) claim->work))
		return 0;
	for (int j = 0; j < n && taken < (uint64) limit; j++)
	{
		int			i = (first + j) % n;
		ShardSet   *set = list_nth(sets, i);
		Datum		buckets = set->buckets;
		Datum		mark[lengthof(claim->mark->argtypes)];

		/* Only the buckets with something due (on this node's shards). */
		if ((buckets = ShardBucketsWithWork(set, (ShardWork) claim->work)) == (Datum) 0)
			continue;

		values[claim->limit_arg] = Int32GetDatum(limit - (int) taken);
		if (ExecSavedInBuckets(claim->due, values, NULL, false, 0, buckets) != SPI_OK_SELECT)
			elog(ERROR, "could not claim effects");
		if (SPI_processed == 0)
			continue;
		memcpy(mark, values, sizeof(Datum) * ids_arg);
		mark[ids_arg] = ResultColumnArray(1, UUIDOID);
		if (ExecSavedInBuckets(claim->mark, mark, NULL, false, 0, buckets) !=
			SPI_OK_UPDATE_RETURNING)
			elog(ERROR, "could not claim effects");
		if (SPI_processed > 0)
		{
			taken += SPI_processed;
			*claim->next_shard = i + 1;
			take(arg);
		}
	}
	return taken;
}

/* InsertOutboxEffects inserts the effects of run key; see outbox.h. */
ArrayType *
InsertOutboxEffects(text *key, const ParsedEffect *parsed, int n, bool automatic,
					const char *actor, EventDetails *details)
{
	Datum	   *ids = palloc(sizeof(Datum) * n);
	int			inserted = 0;
	StringInfoData idlist;
	EventDetails own_details;
	int			bucket;

	initStringInfo(&idlist);
	appendStringInfoChar(&idlist, '[');
	bucket = IdemgateIsDistributed() ? KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) : -1;
	for (int i = 0; i < n; i++)
	{
		Datum		values[6];
		char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
		bool		isnull;
		pg_uuid_t  *id = palloc(sizeof(pg_uuid_t));

		values[0] = UUIDPGetDatum(TimeOrderedUuid());
		if (bucket >= 0)
			StampUuidBucket(DatumGetUUIDP(values[0]), bucket);
		values[1] = PointerGetDatum(key);
		values[2] = PointerGetDatum(cstring_to_text_with_len(parsed[i].type, parsed[i].type_len));
		values[3] = PointerGetDatum(cstring_to_text_with_len(parsed[i].target,
															 parsed[i].target_len));
		values[4] = JsonbPGetDatum(parsed[i].payload);
		values[5] = TimestampTzGetDatum(parsed[i].not_before);
		nulls[5] = parsed[i].has_not_before ? ' ' : 'n';
		if (ExecSaved(parsed[i].cancel_window ? &insert_windowed_effect_stmt : &insert_effect_stmt,
					  values, nulls, false, 0) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not insert effect");
		if (SPI_processed == 1)
			inserted++;
		else
		{
			/* Already enqueued for this key: hand back the existing effect. */
			if (ExecSaved(&existing_effect_stmt, values + 1, NULL, false, 1) != SPI_OK_SELECT ||
				SPI_processed != 1)
				elog(ERROR, "effect conflicted but could not be found");
		}
		memcpy(id, DatumGetUUIDP(GetResultDatum(0, 1, &isnull)), sizeof(pg_uuid_t));
		ids[i] = UUIDPGetDatum(id);

		if (i > 0)
			appendStringInfoString(&idlist, ", ");
		escape_json(&idlist, DatumGetCString(DirectFunctionCall1(uuid_out, ids[i])));
	}
	appendStringInfoChar(&idlist, ']');

	if (details == NULL)
	{
		DetailsInit(&own_details);
		details = &own_details;
	}
	DetailsJsonb(details, "effect_ids",
				 DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(idlist.data))));
	DetailsBool(details, "automatic", automatic);
	DetailsInt(details, "count", n);
	DetailsInt(details, "inserted", inserted);
	RecordEvent(key, NULL, "effects_enqueued", actor, DetailsFinish(details));

	if (inserted > 0)
		WakeDispatcherAtCommit();
	return construct_array(ids, n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
}

/* ExistingEffectIds answers a retried enqueue; see outbox.h. */
ArrayType *
ExistingEffectIds(text *key, const ParsedEffect *parsed, int n)
{
	Datum	   *ids = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		isnull;
		pg_uuid_t  *id = palloc(sizeof(pg_uuid_t));

		values[0] = PointerGetDatum(key);
		values[1] = PointerGetDatum(cstring_to_text_with_len(parsed[i].type, parsed[i].type_len));
		values[2] = PointerGetDatum(cstring_to_text_with_len(parsed[i].target,
															 parsed[i].target_len));
		if (ExecSaved(&existing_effect_stmt, values, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not look up effect");
		if (SPI_processed != 1)
			return NULL;
		memcpy(id, DatumGetUUIDP(GetResultDatum(0, 1, &isnull)), sizeof(pg_uuid_t));
		ids[i] = UUIDPGetDatum(id);
	}
	return construct_array(ids, n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
}

