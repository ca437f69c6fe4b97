/*-------------------------------------------------------------------------
 *
 * src/outbox_dispatch.c
 *	  The outbox statements of the dispatcher: its claim across effect
 *	  types, giving an unsent effect back, and expiring the leases of
 *	  dispatchers that are gone. Part of the outbox module (src/outbox.c
 *	  writes everything else); the dispatcher reads the claimed rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "outbox.h"
#include "outbox_dispatch.h"
#include "spi_util.h"

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
 * re-run (IDEMGATE_RERUN_TYPE_PREFIX, src/rerun.c): its body is the
 * payload itself, the run's input as the workflow first received it.
 */
static SavedStatement claim_stmt = {
	"WITH due AS MATERIALIZED ("
	" SELECT d.effect_id"
	" FROM (SELECT ep.effect_type FROM idemgate.endpoints ep"
	"       WHERE NOT EXISTS (SELECT 1 FROM idemgate.paused_effect_types p"	/* pause_effect_type */
	"                         WHERE p.effect_type OPERATOR(pg_catalog.=) ep.effect_type)"
	"       ORDER BY pg_catalog.random()) e"
	" CROSS JOIN LATERAL ("
	"   SELECT o.effect_id FROM idemgate.outbox o"
	"   WHERE o.effect_type OPERATOR(pg_catalog.=) e.effect_type"
	"     AND o.state OPERATOR(pg_catalog.=) 'pending'"
	"     AND o.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"     AND (SELECT r.state FROM idemgate.runs r"
	"          WHERE r.idempotency_key OPERATOR(pg_catalog.=) o.idempotency_key)"
	"         OPERATOR(pg_catalog.=) 'approved'"
	"   ORDER BY o.next_attempt_at LIMIT $1"
	"   FOR UPDATE OF o SKIP LOCKED) d"
	" LIMIT $1"
	")"
	" UPDATE idemgate.outbox o"
	" SET state = 'sending', attempts = o.attempts OPERATOR(pg_catalog.+) 1, lease_owner = $2,"
	"     lease_expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) e.timeout OPERATOR(pg_catalog.+) $3,"
	"     updated_at = pg_catalog.now()"
	" FROM idemgate.endpoints e"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	" RETURNING o.effect_id, o.attempts, e.url,"
	"   (pg_catalog.date_part('epoch', e.timeout) OPERATOR(pg_catalog.*) 1000)::bigint,"
	"   e.honors_idempotency_key, e.provider_id_field,"
	"   ARRAY(SELECT h.key OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) h.value"
	"         FROM pg_catalog.jsonb_each_text(e.headers) h"
	"         WHERE pg_catalog.lower(h.key) OPERATOR(pg_catalog.<>) ALL ('{content-type,idempotency-key,expect,host,content-length}'::text[])),"
	"   CASE WHEN pg_catalog.starts_with(o.effect_type, '" IDEMGATE_RERUN_TYPE_PREFIX "')"
	"        THEN o.payload::text"
	"        ELSE pg_catalog.jsonb_build_object('effect_id', o.effect_id, 'idempotency_key', o.idempotency_key,"
	"          'effect_type', o.effect_type, 'target', o.target, 'payload', o.payload,"
	"          'attempt', o.attempts)::text END,"
	"   o.effect_type, e.rate_limit, e.max_in_flight",
	3, {INT4OID, UUIDOID, INTERVALOID}, GENERIC_PLAN
};

/* Give a claimed, unsent effect back: pending, attempt not counted. */
static SavedStatement release_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'pending', attempts = GREATEST(attempts OPERATOR(pg_catalog.-) 1, 0),"
	"     lease_owner = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1 AND lease_owner OPERATOR(pg_catalog.=) $2"
	"   AND state OPERATOR(pg_catalog.=) 'sending'",
	2, {UUIDOID, UUIDOID}
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
	"   AND (pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 6) OPERATOR(pg_catalog.&) 240) OPERATOR(pg_catalog.=) 128"
	"   AND pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 7) OPERATOR(pg_catalog.=) " CppAsString2(DISPATCHER_LEASE_MARKER)
	"   AND (pg_catalog.substr(pg_catalog.uuid_send(lease_owner), 1, 4) OPERATOR(pg_catalog.<>) $1"
	"        OR (pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 4) OPERATOR(pg_catalog.=) $2"
	"            AND pg_catalog.get_byte(pg_catalog.uuid_send(lease_owner), 5) OPERATOR(pg_catalog.<>) $3))",
	3, {BYTEAOID, INT4OID, INT4OID}
};

/* ClaimDueForDispatch runs the claim; see outbox_dispatch.h. */
void
ClaimDueForDispatch(int limit, pg_uuid_t *owner, Interval *margin)
{
	Datum		values[3];
	int			rc;

	values[0] = Int32GetDatum(limit);
	values[1] = UUIDPGetDatum(owner);
	values[2] = IntervalPGetDatum(margin);
	rc = ExecSaved(&claim_stmt, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "idemgate: unexpected claim result %d", rc);
}

/* GiveBackEffect returns a claimed, unsent effect; see outbox_dispatch.h. */
void
GiveBackEffect(pg_uuid_t *effect_id, pg_uuid_t *owner)
{
	Datum		values[2];

	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(owner);
	ExecSaved(&release_stmt, values, NULL, false, 0);
}

/* ExpireGoneDispatchersLeases; see outbox_dispatch.h. */
uint64
ExpireGoneDispatchersLeases(bytea *life, int slot, int incarnation)
{
	Datum		values[3];

	values[0] = PointerGetDatum(life);
	values[1] = Int32GetDatum(slot);
	values[2] = Int32GetDatum(incarnation);
	if (ExecSaved(&expire_gone_stmt, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not expire the leases of dispatchers that are gone");
	return SPI_processed;
}
