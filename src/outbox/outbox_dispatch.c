/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox_dispatch.c
 *	  The outbox statements of the dispatcher: its claim across effect
 *	  types, giving an unsent effect back, and expiring the leases of
 *	  dispatchers that are gone. Part of the outbox module (src/outbox/outbox.c
 *	  writes everything else); the dispatcher reads the claimed rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"
#include "utils/timestamp.h"

#include "citus/distributed.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "citus/shard_buckets.h"
#include "citus/statements.h"

/*
 * Plans. The run's state is read by a scalar subquery (one probe of
 * runs_pkey per candidate row), never a join, and the update finds the
 * claimed rows by effect_id = ANY: so every plan the plan cache can pick,
 * generic or custom, is index scans only (outbox_due_idx, runs_pkey,
 * outbox_pkey), and a claim costs the same with a million completed rows
 * in the outbox as with none (bench/README.md shows the plan).
 *
 * The claim: due pending effects of approved runs (as claim_effects) whose
 * type has an endpoint, oldest first per type (in the order of the due
 * index, so a deep backlog is never sorted), skipping rows another
 * dispatcher or a pull worker holds. Types are visited in random order so
 * that one type's backlog cannot starve the others. The dispatcher reads the RETURNING columns
 * in this order (outbox_dispatch.h). The body is the envelope {effect_id,
 * idempotency_key, effect_type, target, payload, attempt}, except for a
 * re-run (IDEMGATE_RERUN_TYPE_PREFIX, src/operations/rerun.c): its body is the
 * payload itself, the run's input as the workflow first received it.
 * The envelope is made by effect_envelope(), an immutable function
 * (jsonb_build_object is stable, which Citus refuses beside columns in an
 * UPDATE).
 */
/* The due effects' ids (locked, SKIP LOCKED), oldest first per type, $1 at most. */
#define DUE_EFFECTS \
	" SELECT d.effect_id"\
	" FROM (SELECT ep.effect_type FROM idemgate.endpoints ep"\
	"       WHERE NOT EXISTS (SELECT 1 FROM idemgate.paused_effect_types p"	/* pause_effect_type */\
	"                         WHERE p.effect_type OPERATOR(pg_catalog.=) ep.effect_type)"\
	/* src/policy/endpoint_circuits.c */\
	"         AND NOT EXISTS (SELECT 1 FROM idemgate.endpoint_circuits c"\
	"                         WHERE c.effect_type OPERATOR(pg_catalog.=) ep.effect_type)"\
	"       ORDER BY pg_catalog.random()) e"\
	" CROSS JOIN LATERAL ("\
	"   SELECT o.effect_id FROM idemgate.outbox o"\
	"   WHERE o.effect_type OPERATOR(pg_catalog.=) e.effect_type/*@buckets o*/"\
	"     AND o.state OPERATOR(pg_catalog.=) 'pending'"\
	"     AND o.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"\
	"     AND (SELECT r.state FROM idemgate.runs r"\
	"          WHERE r.idempotency_key OPERATOR(pg_catalog.=) "\
	"o.idempotency_key/*@join r o*//*@buckets r*/)"\
	"         OPERATOR(pg_catalog.=) 'approved'"\
	"   ORDER BY o.next_attempt_at LIMIT $1"\
	"   FOR UPDATE OF o SKIP LOCKED) d"\
	" LIMIT $1"

/* Mark them sending under lease owner $2, from endpoints e. */
#define MARK_SENDING \
	" UPDATE idemgate.outbox o"\
	" SET state = 'sending', attempts = o.attempts OPERATOR(pg_catalog.+) 1, lease_owner = $2,"\
	"     lease_expires_at = pg_catalog.to_timestamp($4 OPERATOR(pg_catalog.+)"\
	"       pg_catalog.date_part('epoch', e.timeout OPERATOR(pg_catalog.+) $3)),"\
	"     updated_at = pg_catalog.now()"\
	" FROM idemgate.endpoints e"

/* What the dispatcher reads of each claimed effect (outbox_dispatch.h). */
#define CLAIMED_COLUMNS \
	" RETURNING o.effect_id, o.attempts, e.url,"\
	"   (pg_catalog.date_part('epoch', e.timeout) OPERATOR(pg_catalog.*) 1000)::bigint,"\
	"   e.honors_idempotency_key, e.provider_id_field,"\
	"   e.headers,"\
	"   CASE WHEN pg_catalog.starts_with(o.effect_type, '" IDEMGATE_RERUN_TYPE_PREFIX "')"\
	"        THEN o.payload::text"\
	"        ELSE idemgate.effect_envelope(o.effect_id, o.idempotency_key, o.effect_type,"\
	"          o.target, o.payload, o.attempts) END,"\
	"   o.effect_type, e.rate_limit, e.max_in_flight"

static SavedStatement claim_stmt = {
	"WITH due AS MATERIALIZED (" DUE_EFFECTS ")"
	MARK_SENDING
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	CLAIMED_COLUMNS,
	4, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID}, GENERIC_PLAN
};

/*
 * The claim on Citus (ClaimShardByShard), on one shard's buckets, in
 * two statements of the same transaction: Citus would run the CTE of
 * claim_stmt as a subplan and ship its result through a connection back
 * to this node, making every claim a two-phase commit; each of these runs
 * locally as one task. The second marks only effects still pending: when
 * a shard moves between the two, the first may have read the old
 * placement, whose row locks do not hold on the new one, where another
 * node's dispatcher may have claimed the same effect (test/citus/t/050
 * caught one sent twice). Locked there, the update waits for that claim
 * to commit, then skips the effect.
 */
static SavedStatement due_ids_stmt = {
	DUE_EFFECTS,
	1, {INT4OID}
};
static SavedStatement mark_sending_stmt = {
	MARK_SENDING
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($5)/*@buckets o*/"
	"   AND o.state OPERATOR(pg_catalog.=) 'pending'"	/* see below */
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	CLAIMED_COLUMNS,
	5, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID, UUIDARRAYOID}
};

/*
 * The claim of one type ($5), whatever its circuit: effects due, made at
 * least $6 seconds ago, oldest first, $1 at most. A circuit's probe (one
 * effect, $6 = 0) and the effects held behind it for longer than
 * idemgate.circuit_max_hold (src/policy/endpoint_circuits.c; the caller asks
 * only for a circuit open that long: a failed probe's next attempt moves
 * on, its age does not). Same columns as
 * the claim above; $2 to $4 as there.
 */
#define DUE_OF_TYPE \
	" SELECT o.effect_id FROM idemgate.outbox o"\
	" WHERE o.effect_type OPERATOR(pg_catalog.=) $5/*@buckets o*/"\
	"   AND o.state OPERATOR(pg_catalog.=) 'pending'"\
	"   AND o.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"\
	"   AND o.created_at OPERATOR(pg_catalog.<=)"\
	"       (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $6))"\
	"   AND NOT EXISTS (SELECT 1 FROM idemgate.paused_effect_types p"\
	"                   WHERE p.effect_type OPERATOR(pg_catalog.=) $5)"\
	"   AND (SELECT r.state FROM idemgate.runs r"\
	"        WHERE r.idempotency_key OPERATOR(pg_catalog.=) "\
	"o.idempotency_key/*@join r o*//*@buckets r*/)"\
	"       OPERATOR(pg_catalog.=) 'approved'"\
	" ORDER BY o.next_attempt_at LIMIT $1"\
	" FOR UPDATE OF o SKIP LOCKED"

static SavedStatement claim_of_type_stmt = {
	"WITH due AS MATERIALIZED (" DUE_OF_TYPE ")"
	MARK_SENDING
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	CLAIMED_COLUMNS,
	6, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID, TEXTOID, FLOAT8OID}
};
static SavedStatement due_of_type_stmt = {
	DUE_OF_TYPE,
	6, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID, TEXTOID, FLOAT8OID}
};
static SavedStatement mark_of_type_stmt = {
	MARK_SENDING
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($7)/*@buckets o*/"
	"   AND o.state OPERATOR(pg_catalog.=) 'pending'"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	"   AND $5 IS NOT NULL AND $6 IS NOT NULL"	/* the due statement's */
	CLAIMED_COLUMNS,
	7, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID, TEXTOID, FLOAT8OID, UUIDARRAYOID}
};

/*
 * Give a claimed, unsent effect back: pending, attempt not counted, due
 * again as before (release_stmt) or $3 seconds from now (hold_stmt). Two
 * statements, not one with CASE WHEN $3 > 0: a generic plan keeps the
 * CASE, and Citus refuses a STABLE function (now()) beside a column
 * (next_attempt_at) in an UPDATE's SET, so on Citus every give-back failed
 * and a kill switch caught between claim and send stranded the claimed
 * effects until their lease expired (test/citus/t/040).
 */
#define GIVE_BACK \
	"UPDATE idemgate.outbox"\
	" SET state = 'pending', attempts = GREATEST(attempts OPERATOR(pg_catalog.-) 1, 0),"\
	"     lease_owner = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
#define GIVE_BACK_WHERE \
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ "\
	"AND lease_owner OPERATOR(pg_catalog.=) $2"\
	"   AND state OPERATOR(pg_catalog.=) 'sending'"
static SavedStatement release_stmt = {
	GIVE_BACK GIVE_BACK_WHERE,
	2, {UUIDOID, UUIDOID}
};
static SavedStatement hold_stmt = {
	GIVE_BACK ","
	"     next_attempt_at = pg_catalog.now() OPERATOR(pg_catalog.+) "
	"pg_catalog.make_interval(secs => $3)"
	GIVE_BACK_WHERE,
	3, {UUIDOID, UUIDOID, FLOAT8OID}
};

/*
 * Effects leased by a dispatcher that is gone: a version 8 owner with our
 * marker, from another life ($1), or from an earlier incarnation ($3) of
 * our own slot ($2).
 */
static SavedStatement expire_gone_stmt = {
	"UPDATE idemgate.outbox"
	" SET lease_expires_at = pg_catalog.now() OPERATOR(pg_catalog.-) '1 microsecond'::interval"
	" WHERE state OPERATOR(pg_catalog.=) 'sending'"
	"   AND lease_expires_at OPERATOR(pg_catalog.>=) pg_catalog.now()"
	"   AND (pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 6) OPERATOR(pg_catalog.&) 240) "
	"OPERATOR(pg_catalog.=) 128"
	"   AND pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 7) "
	"OPERATOR(pg_catalog.=) " CppAsString2(DISPATCHER_LEASE_MARKER)
	"   AND (pg_catalog.substr(pg_catalog.uuid_send(lease_owner), 1, 4) OPERATOR(pg_catalog.<>) $1"
	"        OR (pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 4) "
	"OPERATOR(pg_catalog.=) $2"
	"            AND pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 5) "
	"OPERATOR(pg_catalog.<>) $3))"
	"   AND ($4::pg_catalog.int4 IS NULL"
	"        OR pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 9) "
	"OPERATOR(pg_catalog.*) 256"
	"           OPERATOR(pg_catalog.+) pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 10)"
	"           OPERATOR(pg_catalog.=) $4)/*@buckets outbox*/",
	4, {BYTEAOID, INT4OID, INT4OID, INT4OID}
};


PG_FUNCTION_INFO_V1(idemgate_effect_envelope);

/* AppendJsonString appends value as a JSON string, escaped as jsonb prints it. */
static void
AppendJsonString(StringInfo buf, text *value)
{
	char	   *s = text_to_cstring(value);

	escape_json(buf, s);
	pfree(s);
}

/*
 * idemgate_effect_envelope implements effect_envelope(effect_id,
 * idempotency_key, effect_type, target, payload, attempt): the body the
 * dispatcher posts, the same text as jsonb_build_object of those six
 * (test/sql/effect_envelope.sql). Written directly, with the keys in the
 * order jsonb keeps them (shorter first, then bytewise), rather than built
 * as a jsonb and printed: the payload is printed once instead of being
 * copied into a new jsonb first (a tenth of the claim's instructions).
 */
Datum
idemgate_effect_envelope(PG_FUNCTION_ARGS)
{
	Jsonb	   *payload = PG_GETARG_JSONB_P(4);
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"target\": ");
	AppendJsonString(&buf, PG_GETARG_TEXT_PP(3));
	appendStringInfo(&buf, ", \"attempt\": %d, \"payload\": ", PG_GETARG_INT32(5));
	(void) JsonbToCString(&buf, &payload->root, VARSIZE(payload));
	appendStringInfo(&buf, ", \"effect_id\": \"%s\", \"effect_type\": ",
					 DatumGetCString(DirectFunctionCall1(uuid_out, PG_GETARG_DATUM(0))));
	AppendJsonString(&buf, PG_GETARG_TEXT_PP(2));
	appendStringInfoString(&buf, ", \"idempotency_key\": ");
	AppendJsonString(&buf, PG_GETARG_TEXT_PP(1));
	appendStringInfoChar(&buf, '}');
	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}

/* LeaseClaimValues fills the four parameters of a leasing claim; see outbox_dispatch.h. */
void
LeaseClaimValues(Datum *values, int limit, pg_uuid_t *owner, Interval *margin)
{
	values[0] = Int32GetDatum(limit);
	values[1] = UUIDPGetDatum(owner);
	values[2] = IntervalPGetDatum(margin);
	/*
	 * now() as seconds since the epoch: Citus refuses a STABLE function or
	 * operator (timestamptz + interval) beside a column in an UPDATE.
	 */
	values[3] = Float8GetDatum((double) (GetCurrentTransactionStartTimestamp() -
										 SetEpochTimestamp()) / USECS_PER_SEC);
}

/* ClaimLocally; see outbox_dispatch.h. */
uint64
ClaimLocally(SavedStatement *stmt, Datum *values, ClaimedRowsReader take, void *arg,
			 const char *failure)
{
	ExecSavedExpect(stmt, values, NULL, false, 0, SPI_OK_UPDATE_RETURNING, failure);
	if (SPI_processed > 0)
		take(arg);
	return SPI_processed;
}

/* ClaimDueForDispatch runs the claim; see outbox_dispatch.h. */
uint64
ClaimDueForDispatch(int limit, pg_uuid_t *owner, Interval *margin,
					ClaimedRowsReader take, void *arg)
{
	Datum		values[4];
	int			rc;

	LeaseClaimValues(values, limit, owner, margin);
	if (IdemgateIsDistributed())
	{
		/*
		 * On Citus (docs/citus.md, "Delivery") each node delivers the
		 * effects stored on it, its shards in turn until the batch is full;
		 * a node without shards, the coordinator, claims nothing.
		 */
		static int	next_shard = 0;
		static const ShardClaim dispatch = {
			&due_ids_stmt, &mark_sending_stmt, 0, SHARDS_LOCAL, &next_shard
		};

		return ClaimShardByShard(&dispatch, values, limit, take, arg);
	}
	rc = ExecSaved(&claim_stmt, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "idemgate: unexpected claim result %d", rc);
	if (SPI_processed > 0)
		take(arg);
	return SPI_processed;
}

/* ClaimOfTypeForDispatch claims effects of one type; see outbox_dispatch.h. */
uint64
ClaimOfTypeForDispatch(const char *effect_type, double min_age_secs, int limit,
					   pg_uuid_t *owner, Interval *margin, ClaimedRowsReader take, void *arg)
{
	Datum		values[6];

	LeaseClaimValues(values, limit, owner, margin);
	values[4] = CStringGetTextDatum(effect_type);
	values[5] = Float8GetDatum(min_age_secs);
	if (IdemgateIsDistributed())
	{
		static int	next_shard = 0;
		static const ShardClaim of_type = {
			&due_of_type_stmt, &mark_of_type_stmt, 0, SHARDS_LOCAL, &next_shard
		};

		return ClaimShardByShard(&of_type, values, limit, take, arg);
	}
	return ClaimLocally(&claim_of_type_stmt, values, take, arg,
						"idemgate: could not claim effects of one type");
}

/* GiveBackEffect returns a claimed, unsent effect; see outbox_dispatch.h. */
void
GiveBackEffect(pg_uuid_t *effect_id, pg_uuid_t *owner, double hold_secs)
{
	Datum		values[3];

	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(owner);
	values[2] = Float8GetDatum(hold_secs);
	ExecSaved(hold_secs > 0 ? &hold_stmt : &release_stmt, values, NULL, false, 0);
}

/* ExpireGoneDispatchersLeases; see outbox_dispatch.h. */
uint64
ExpireGoneDispatchersLeases(bytea *life, int slot, int incarnation)
{
	Datum		values[4];

	char		nulls[4] = {' ', ' ', ' ', 'n'};
	uint64		expired = 0;

	values[0] = PointerGetDatum(life);
	values[1] = Int32GetDatum(slot);
	values[2] = Int32GetDatum(incarnation);
	if (IdemgateIsDistributed())
	{
		ListCell   *lc;

		/* Only this node's dispatchers: another node's may be alive. */
		values[3] = Int32GetDatum(LocalGroupId());
		nulls[3] = ' ';
		foreach(lc, ShardBucketSets(SHARDS_SCAN))
		{
			if (ExecSavedInBuckets(&expire_gone_stmt, values, nulls, false, 0,
								   ((ShardSet *) lfirst(lc))->buckets) != SPI_OK_UPDATE)
				elog(ERROR, "could not expire the leases of dispatchers that are gone");
			expired += SPI_processed;
		}
		return expired;
	}
	ExecSavedExpect(&expire_gone_stmt, values, nulls, false, 0, SPI_OK_UPDATE,
					"could not expire the leases of dispatchers that are gone");
	return SPI_processed;
}
