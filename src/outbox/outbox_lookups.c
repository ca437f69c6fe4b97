/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox_lookups.c
 *	  The outbox statements of the dispatcher's status look-ups (SPEC §22;
 *	  docs/dispatcher.md, "Reconciliation"). Part of the outbox module,
 *	  like src/outbox/outbox_dispatch.c; the dispatcher sends the GETs.
 *
 *	  An unknown effect (the request may have reached the provider) whose
 *	  endpoint has a status_url is leased for a look-up: it stays unknown,
 *	  lease_owner and lease_expires_at say who asks until when, so one
 *	  dispatcher asks at a time and a look-up lost with its dispatcher is
 *	  asked again when its lease is over. The answer decides: 2xx →
 *	  completed, 404 → pending (the provider never got it: sent again, with
 *	  the same Idempotency-Key), anything else → unknown, asked again after
 *	  a backoff counted by status_checks. An operator's resolve_effect or
 *	  cancel meanwhile wins: the answer then finds the effect no longer
 *	  unknown under our lease, and is ignored.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "citus/distributed.h"
#include "ledger/events.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "outbox/outbox_lookups.h"
#include "ledger/runs.h"
#include "citus/shard_buckets.h"
#include "citus/statements.h"

/*
 * Due look-ups, $1 at most, oldest first per type: unknown, not leased
 * (or its look-up's lease is over), the backoff since it last changed
 * over, and a provider id when the template needs one. The partial index
 * outbox_unknown_idx (effect_type, updated_at) holds only unknown rows.
 */
#define DUE_LOOKUPS \
	" SELECT d.effect_id"\
	" FROM (SELECT ep.effect_type, ep.status_url FROM idemgate.endpoints ep"\
	"       WHERE ep.status_url IS NOT NULL"\
	"         AND NOT EXISTS (SELECT 1 FROM idemgate.paused_effect_types p"\
	"                         WHERE p.effect_type OPERATOR(pg_catalog.=) ep.effect_type)) e"\
	" CROSS JOIN LATERAL ("\
	"   SELECT o.effect_id FROM idemgate.outbox o"\
	"   WHERE o.effect_type OPERATOR(pg_catalog.=) e.effect_type/*@buckets o*/"\
	"     AND o.state OPERATOR(pg_catalog.=) 'unknown'"\
	"     AND o.updated_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-)"\
	"         pg_catalog.make_interval(secs => LEAST(3600::float8,"\
	"           10::float8 OPERATOR(pg_catalog.*) pg_catalog.power(2::float8, "\
	"LEAST(o.status_checks, 12)::float8))))"\
	"     AND (o.lease_expires_at IS NULL "\
	"OR o.lease_expires_at OPERATOR(pg_catalog.<) pg_catalog.now())"\
	"     AND (o.provider_id IS NOT NULL OR pg_catalog.strpos(e.status_url, '{provider_id}') "\
	"OPERATOR(pg_catalog.=) 0)"\
	"   ORDER BY o.updated_at LIMIT $1"\
	"   FOR UPDATE OF o SKIP LOCKED) d"\
	" LIMIT $1"

/* Lease them to $2 for the endpoint's timeout plus $3 ($4: now as epoch). */
#define MARK_LOOKUP \
	" UPDATE idemgate.outbox o"\
	" SET lease_owner = $2,"\
	"     lease_expires_at = pg_catalog.to_timestamp($4 OPERATOR(pg_catalog.+)"\
	"       pg_catalog.date_part('epoch', e.timeout OPERATOR(pg_catalog.+) $3))"\
	" FROM idemgate.endpoints e"

#define LOOKUP_COLUMNS \
	" RETURNING o.effect_id, o.provider_id, e.status_url,"\
	"   (pg_catalog.date_part('epoch', e.timeout) OPERATOR(pg_catalog.*) 1000)::bigint,"\
	"   e.headers,"\
	"   o.effect_type, e.provider_id_field, e.rate_limit, e.max_in_flight"

static SavedStatement claim_lookups_stmt = {
	"WITH due AS MATERIALIZED (" DUE_LOOKUPS ")"
	MARK_LOOKUP
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT due.effect_id FROM due))"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	LOOKUP_COLUMNS,
	4, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID}
};

/* On Citus, shard by shard in two statements, as the dispatcher's claim. */
static SavedStatement due_lookups_stmt = {
	DUE_LOOKUPS,
	1, {INT4OID}
};
static SavedStatement mark_lookups_stmt = {
	MARK_LOOKUP
	" WHERE o.effect_id OPERATOR(pg_catalog.=) ANY ($5)/*@buckets o*/"
	"   AND o.state OPERATOR(pg_catalog.=) 'unknown'"
	"   AND (o.lease_expires_at IS NULL "
	"OR o.lease_expires_at OPERATOR(pg_catalog.<) pg_catalog.to_timestamp($4))"
	"   AND e.effect_type OPERATOR(pg_catalog.=) o.effect_type"
	LOOKUP_COLUMNS,
	5, {INT4OID, UUIDOID, INTERVALOID, FLOAT8OID, UUIDARRAYOID}
};

/* The effect, if it is still unknown under our look-up's lease. */
static SavedStatement lock_lookup_stmt = {
	"SELECT o.idempotency_key FROM idemgate.outbox o"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/"
	"   AND o.lease_owner OPERATOR(pg_catalog.=) $2"
	"   AND o.state OPERATOR(pg_catalog.=) 'unknown'"
	" FOR UPDATE OF o",
	2, {UUIDOID, UUIDOID}
};

/* Still unknown: asked again after the next backoff step. */
static SavedStatement defer_lookup_stmt = {
	"UPDATE idemgate.outbox"
	" SET status_checks = status_checks OPERATOR(pg_catalog.+) 1, lease_expires_at = NULL,"
	"     updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {UUIDOID}
};

/* Not sent: due again as before. */
static SavedStatement give_back_lookup_stmt = {
	"UPDATE idemgate.outbox SET lease_expires_at = NULL"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/"
	"   AND lease_owner OPERATOR(pg_catalog.=) $2 AND state OPERATOR(pg_catalog.=) 'unknown'",
	2, {UUIDOID, UUIDOID}
};

/* ClaimUnknownForLookup; see outbox_lookups.h. */
uint64
ClaimUnknownForLookup(int limit, pg_uuid_t *owner, Interval *margin,
					  ClaimedRowsReader take, void *arg)
{
	Datum		values[4];

	LeaseClaimValues(values, limit, owner, margin);
	if (IdemgateIsDistributed())
	{
		static int	next_shard = 0;
		static const ShardClaim lookups = {
			&due_lookups_stmt, &mark_lookups_stmt, 0, SHARDS_LOCAL, &next_shard,
			SHARD_UNKNOWN_EFFECTS
		};

		return ClaimShardByShard(&lookups, values, limit, take, arg);
	}
	return ClaimLocally(&claim_lookups_stmt, values, take, arg, "could not claim status look-ups");
}

/* RecordLookupAnswer; see outbox_lookups.h. */
LookupResult
RecordLookupAnswer(pg_uuid_t *effect_id, pg_uuid_t *owner, int status, const char *provider_id)
{
	Datum		values[2];
	bool		isnull;
	text	   *key;
	EventDetails details;
	LookupResult result;

	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(owner);
	ExecSavedExpect(&lock_lookup_stmt, values, NULL, false, 1, SPI_OK_SELECT,
					"could not lock effect");
	if (SPI_processed == 0)
		return LOOKUP_IGNORED;
	key = DatumGetTextPCopy(GetResultDatum(0, 1, &isnull));

	if (status >= 200 && status < 300)
	{
		result = LOOKUP_DELIVERED;
		ResolveLockedEffectDelivered(effect_id, provider_id);
	}
	else if (status == 404)
	{
		result = LOOKUP_NOT_RECEIVED;
		RequeueLockedEffect(effect_id);
	}
	else
	{
		ExecSavedOneRow(&defer_lookup_stmt, values, NULL, false, 0, SPI_OK_UPDATE,
						"could not record a status look-up");
		return LOOKUP_STILL_UNKNOWN;
	}

	DetailsInit(&details);
	DetailsBool(&details, "delivered", result == LOOKUP_DELIVERED);
	DetailsText(&details, "new_state", result == LOOKUP_DELIVERED ? "completed" : "pending");
	DetailsInt(&details, "status", status);
	DetailsText(&details, "provider_id", provider_id);
	RecordEvent(key, effect_id, "effect_reconciled", NULL, DetailsFinish(&details));
	if (result == LOOKUP_DELIVERED)
		CompleteRunIfDone(key);
	return result;
}

/* GiveBackLookup; see outbox_lookups.h. */
void
GiveBackLookup(pg_uuid_t *effect_id, pg_uuid_t *owner)
{
	Datum		values[2];

	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(owner);
	ExecSavedExpect(&give_back_lookup_stmt, values, NULL, false, 0, SPI_OK_UPDATE,
					"could not give back a status look-up");
}
