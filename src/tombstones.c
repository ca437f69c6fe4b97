/*-------------------------------------------------------------------------
 *
 * src/tombstones.c
 *	  Purge forgets payloads, not keys (docs/operations.md, "Retention").
 *
 * Design note. purge (src/retention.c) deletes a finished run with
 * everything of it and keeps a tombstone in the same statement
 * (TOMBSTONE_INSERT_CTE): the first 16 bytes of the SHA-256 of the key and
 * of the payload hash, the final state and two times — 81 bytes of heap
 * and 28 of index per key, and no personal data (a key often names a
 * customer or an invoice). A claim of a key that is not in runs asks
 * FindTombstone before it inserts: a tombstone answers duplicate with
 * state purged (IG001 when the payload differs), so a webhook redelivered
 * weeks later is still recognised. The look-up reads a snapshot taken
 * after the claim found no run, and purge holds the run's row lock until
 * it commits the tombstone, so a claim racing with purge sees either the
 * run (and waits for purge) or the tombstone: never neither. Until the
 * first tombstone exists a claim pays only a relation size check.
 * purge_tombstones(older_than) and idemgate.tombstone_retention bound how
 * long they are kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "args.h"
#include "crypto.h"
#include "events.h"
#include "idemgate_limits.h"
#include "spi_util.h"
#include "tombstones.h"

PG_FUNCTION_INFO_V1(idemgate_purge_tombstones);

static SavedStatement find_stmt = {
	"SELECT t.payload_digest, t.final_state FROM idemgate.tombstones t"
	" WHERE t.key_digest OPERATOR(pg_catalog.=) $1",
	1, {UUIDOID}
};

static SavedStatement purge_stmt = {
	"DELETE FROM idemgate.tombstones WHERE purged_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $1)",
	1, {INTERVALOID}
};

/* TombstonesRelid returns the OID of idemgate.tombstones, or InvalidOid. */
static Oid
TombstonesRelid(void)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) ? get_relname_relid("tombstones", nsp) : InvalidOid;
}

/* TombstonesInstalled; see tombstones.h. */
bool
TombstonesInstalled(void)
{
	return OidIsValid(TombstonesRelid());
}

/* AnyTombstone: the table exists and has a page (it may hold a row). */
static bool
AnyTombstone(void)
{
	Oid			relid = TombstonesRelid();
	Relation	rel;
	bool		any;

	if (!OidIsValid(relid))
		return false;
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	/* On Citus the shell table is empty: the shards hold the rows. */
	any = RelationGetNumberOfBlocks(rel) > 0 || rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relhassubclass;
	relation_close(rel, AccessShareLock);
	return any;
}

/* FindTombstone; see tombstones.h. */
bool
FindTombstone(text *key, Tombstone *t)
{
	uint8		digest[32];
	pg_uuid_t	key_digest;
	Datum		values[1];
	bool		isnull;
	Datum		d;

	if (!AnyTombstone())
		return false;
	Sha256(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), digest);
	memcpy(key_digest.data, digest, UUID_LEN);
	values[0] = UUIDPGetDatum(&key_digest);
	if (ExecSavedLatest(&find_stmt, values, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up tombstone");
	if (SPI_processed == 0)
		return false;
	d = GetResultDatum(0, 1, &isnull);
	memcpy(t->payload_digest, DatumGetUUIDP(d)->data, UUID_LEN);
	t->final_state = DatumGetChar(GetResultDatum(0, 2, &isnull));
	return true;
}

/* TombstoneMatches; see tombstones.h. */
bool
TombstoneMatches(const Tombstone *t, bytea *payload_hash)
{
	return VARSIZE_ANY_EXHDR(payload_hash) >= UUID_LEN &&
		memcmp(VARDATA_ANY(payload_hash), t->payload_digest, UUID_LEN) == 0;
}

/*
 * idemgate_purge_tombstones implements purge_tombstones(older_than):
 * deletes the tombstones of runs purged more than older_than ago
 * and returns how many; audited as a tombstones_purged event.
 */
Datum
idemgate_purge_tombstones(PG_FUNCTION_ARGS)
{
	Interval   *older_than;
	int64		n;
	EventDetails details;

	older_than = IntervalArg(fcinfo, 0, "older_than", 0, IDEMGATE_MAX_RETENTION_USECS,
							 "Pass how long tombstones are kept, e.g. interval '400 days' (see idemgate.tombstone_retention).");
	ConnectSPI();
	if (ExecSaved(&purge_stmt, (Datum *) &older_than, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not purge tombstones");
	n = (int64) SPI_processed;
	DetailsInit(&details);
	DetailsText(&details, "older_than",
				DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(older_than))));
	DetailsInt(&details, "tombstones", n);
	RecordEvent(NULL, NULL, "tombstones_purged", GetUserNameFromId(GetSessionUserId(), false),
				DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_INT64(n);
}
