/*-------------------------------------------------------------------------
 *
 * src/citus/distributed.c
 *	  idemgate on Citus (docs/citus.md). Every per-run table is distributed
 *	  by a bucket column: the first two bytes of SHA-256 of the run's key.
 *	  A call carries its bucket in what it is given: the key itself, an
 *	  effect or approval id (a version 8 UUID whose first two bytes are the
 *	  bucket) or a token (the 43-character secret, '.', the bucket in four
 *	  hex digits). So every call finds its one shard from its arguments,
 *	  with no look-up; src/citus/statements.c adds the bucket to each statement.
 *
 *	  Whether this install is distributed is read once per backend and
 *	  again after any invalidation of idemgate.runs (distribute() changes
 *	  it), so a single-node install pays one catalog probe per backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "inttypes.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "core/crypto.h"
#include "citus/distributed.h"

PG_FUNCTION_INFO_V1(idemgate_key_bucket);
PG_FUNCTION_INFO_V1(idemgate_uuid_bucket);
PG_FUNCTION_INFO_V1(idemgate_routed_id);

typedef enum
{
	DIST_UNKNOWN,
	DIST_NO,
	DIST_YES
} DistState;

static DistState dist_state = DIST_UNKNOWN;
static bool callback_registered = false;

/* DistributedRelcacheHook; see distributed.h. */
void		(*DistributedRelcacheHook) (Oid relid) = NULL;

/*
 * ForgetDistState: any relation invalidation may be distribute() at work,
 * or a shard moving (src/citus/local_shards.c).
 */
static void
ForgetDistState(Datum arg, Oid relid)
{
	dist_state = DIST_UNKNOWN;
	if (DistributedRelcacheHook)
		DistributedRelcacheHook(relid);
}

/*
 * IdemgateIsDistributed says whether idemgate.runs is a Citus distributed
 * table here (on the coordinator or, with metadata synced, on a worker).
 */
bool
IdemgateIsDistributed(void)
{
	if (dist_state != DIST_UNKNOWN)
		return dist_state == DIST_YES;
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(ForgetDistState, (Datum) 0);
		callback_registered = true;
	}
	dist_state = IdemgateTableIsDistributed("runs") ? DIST_YES : DIST_NO;
	return dist_state == DIST_YES;
}

/*
 * CatalogHasRow runs sql, a read of the Citus catalog named catalog with no
 * user values in it, in an SPI connection of its own; true when it found a
 * row.
 */
static bool
CatalogHasRow(const char *sql, const char *catalog)
{
	int			rc;
	bool		found;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute(sql, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read %s: %s", catalog, SPI_result_code_string(rc));
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/*
 * CitusWorkerBeforeDistribute says whether this node is a Citus worker
 * (a group other than the coordinator's 0) whose idemgate is not
 * distributed yet: its tables are placeholders that distribute() is about
 * to change (docs/citus.md), so its dispatcher leaves them alone rather
 * than race that DDL into a deadlock. Only asked while not distributed.
 */
bool
CitusWorkerBeforeDistribute(void)
{
	if (IdemgateIsDistributed() ||
		!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return false;
	return CatalogHasRow("SELECT 1 FROM pg_catalog.pg_dist_local_group"
						 " WHERE groupid OPERATOR(pg_catalog.>) 0", "pg_dist_local_group");
}

/*
 * IdemgateTableIsDistributed says whether idemgate.<name> is a Citus
 * table (not cached: for callers that cache it themselves).
 */
bool
IdemgateTableIsDistributed(const char *name)
{
	Oid			nsp = get_namespace_oid("idemgate", true);	/* below statements.c */
	Oid			rel = OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
	char		sql[160];

	if (!OidIsValid(rel) || !OidIsValid(get_relname_relid("pg_dist_partition",
														  PG_CATALOG_NAMESPACE)))
		return false;
	/* Catalog read, no user values: the relation oid is a number. */
	snprintf(sql, sizeof(sql),
			 "SELECT 1 FROM pg_catalog.pg_dist_partition "
			 "WHERE logicalrelid OPERATOR(pg_catalog.=) %u", rel);
	return CatalogHasRow(sql, "pg_dist_partition");
}

/* KeyBucket returns the bucket of a run key. */
int
KeyBucket(const char *key, int len)
{
	uint8		digest[IDEMGATE_SHA256_LEN];

	Sha256(key, len, digest);
	return (digest[0] << 8) | digest[1];
}

/*
 * UuidBucket returns the bucket an id carries, or -1 for an id made before
 * the install was distributed (any UUID but version 8).
 */
int
UuidBucket(const pg_uuid_t *id)
{
	if ((id->data[6] >> 4) != 8)
		return -1;
	return (id->data[0] << 8) | id->data[1];
}

/* StampUuidBucket turns a random UUID into a version 8 one carrying bucket. */
void
StampUuidBucket(pg_uuid_t *id, int bucket)
{
	id->data[0] = (uint8) (bucket >> 8);
	id->data[1] = (uint8) (bucket & 0xff);
	id->data[6] = (id->data[6] & 0x0f) | 0x80;	/* version 8 */
	id->data[8] = (id->data[8] & 0x3f) | 0x80;	/* RFC 9562 variant */
}

/*
 * TokenBucket returns the bucket a token carries ("<43 chars>.<4 hex>"), or
 * -1 for a token without one (single node, or issued before distribute()).
 */
int
TokenBucket(const char *token, int len)
{
	int			bucket = 0;

	if (len != IDEMGATE_ROUTED_TOKEN_CHARS || token[IDEMGATE_TOKEN_SECRET_CHARS] != '.')
		return -1;
	for (int i = IDEMGATE_TOKEN_SECRET_CHARS + 1; i < len; i++)
	{
		char		c = token[i];
		int			v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else
			return -1;
		bucket = (bucket << 4) | v;
	}
	return bucket;
}

/*
 * A dead letter's id on a distributed install: bit 62 set, 46 random bits,
 * then the bucket in the low 16 bits, so reinject(id) finds its shard. Ids
 * made before distribute() are identity values, far below bit 62.
 */
#define ROUTED_ID_FLAG (INT64CONST(1) << 62)

/* RoutedIdBucket returns the bucket a dead letter id carries, or -1. */
int
RoutedIdBucket(int64 id)
{
	if ((id & ROUTED_ID_FLAG) == 0 || id < 0)
		return -1;
	return (int) (id & 0xffff);
}

/* idemgate.routed_id(bucket integer) RETURNS bigint: a new such id. */
Datum
idemgate_routed_id(PG_FUNCTION_ARGS)
{
	int32		bucket = PG_GETARG_INT32(0);
	uint64		r;

	if (bucket < 0 || bucket >= IDEMGATE_BUCKETS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bucket must be between 0 and %d, not %d", IDEMGATE_BUCKETS - 1, bucket)));
	RandomBytes((uint8 *) &r, sizeof(r));
	r &= (UINT64CONST(1) << 46) - 1;
	PG_RETURN_INT64(ROUTED_ID_FLAG | (int64) (r << 16) | bucket);
}

/*
 * Ids and tokens made before distribute() carry no bucket: their bucket is
 * read from the row, on every shard (one multi-shard read; docs/citus.md,
 * "Limits"). One that is not found routes to bucket 0, where the statement
 * then finds nothing either, as on a single node.
 */
static int
LookUpBucket(SPIPlanPtr *plan, const char *sql, Oid type, Datum value)
{
	int			bucket = 0;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, 1, &type);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare \"%s\"", sql);
		*plan = p;
	}
	if (SPI_execute_plan(*plan, &value, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up a bucket");
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			bucket = DatumGetInt32(d);
	}
	SPI_finish();
	return bucket;
}

/* LegacyUuidBucket: the bucket of an effect or approval id without one. */
int
LegacyUuidBucket(const pg_uuid_t *id)
{
	static SPIPlanPtr plan = NULL;

	return LookUpBucket(&plan,
						"SELECT bucket FROM idemgate.outbox "
						"WHERE effect_id OPERATOR(pg_catalog.=) $1"
						" UNION ALL"
						" SELECT bucket FROM idemgate.approvals "
						"WHERE approval_id OPERATOR(pg_catalog.=) $1"
						" LIMIT 1",
						UUIDOID, UUIDPGetDatum(unconstify(pg_uuid_t *, id)));
}

/* LegacyDeadLetterBucket: the bucket of a dead letter id without one. */
int
LegacyDeadLetterBucket(int64 id)
{
	static SPIPlanPtr plan = NULL;

	return LookUpBucket(&plan,
						"SELECT bucket FROM idemgate.dead_letters "
						"WHERE id OPERATOR(pg_catalog.=) $1",
						INT8OID, Int64GetDatum(id));
}

/* LegacyTokenBucket: the bucket of the approval whose token has this hash. */
int
LegacyTokenBucket(bytea *token_hash)
{
	static SPIPlanPtr plan = NULL;

	return LookUpBucket(&plan,
						"SELECT bucket FROM idemgate.approvals "
						"WHERE token_hash OPERATOR(pg_catalog.=) $1",
						BYTEAOID, PointerGetDatum(token_hash));
}

/* idemgate.key_bucket(key text) RETURNS integer */
Datum
idemgate_key_bucket(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT32(KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
}

/* idemgate.uuid_bucket(id uuid) RETURNS integer: NULL when it carries none. */
Datum
idemgate_uuid_bucket(PG_FUNCTION_ARGS)
{
	int			bucket = UuidBucket(PG_GETARG_UUID_P(0));

	if (bucket < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(bucket);
}
