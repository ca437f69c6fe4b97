/*-------------------------------------------------------------------------
 *
 * src/ledger/tombstones.c
 *	  Purge forgets payloads, not keys (docs/operations.md, "Retention").
 *
 * Design note. purge (src/operations/retention.c) deletes a finished run with
 * everything of it and keeps a tombstone in the same statement
 * (TOMBSTONE_INSERT_CTE): the first 8 bytes of the SHA-256 of the key and
 * of the payload hash (bigints), the final state and two times — about 90
 * bytes per key with its primary key (bench/storage), and no personal
 * data (a key often names a customer or an invoice). A claim of a key that is not in runs asks
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

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
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

#include "core/args.h"
#include "core/crypto.h"
#include "citus/distributed.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "core/pg_compat.h"
#include "citus/statements.h"
#include "ledger/tombstones.h"

PG_FUNCTION_INFO_V1(idemgate_purge_tombstones);

static bool FindTombstoneOnShard(text *key, Tombstone *t);
static bool FindTombstoneHere(Oid relid, text *key, Tombstone *t);
static int64 DigestInt64(const uint8 *d);

static SavedStatement purge_stmt = {
	"DELETE FROM idemgate.tombstones WHERE purged_at OPERATOR(pg_catalog.<) (pg_catalog.now() "
	"OPERATOR(pg_catalog.-) $1)",
	1, {INTERVALOID}
};


/* Whether tombstones is a Citus table: -1 unknown (a relcache change resets it). */
static int	tombstones_distributed = -1;
static bool tombstones_callback = false;

static void
ForgetTombstonesDistributed(Datum arg, Oid relid)
{
	tombstones_distributed = -1;
}

/* TombstonesDistributed; see tombstones.h. */
bool
TombstonesDistributed(void)
{
	if (tombstones_distributed < 0)
	{
		if (!tombstones_callback)
		{
			CacheRegisterRelcacheCallback(ForgetTombstonesDistributed, (Datum) 0);
			tombstones_callback = true;
		}
		tombstones_distributed = IdemgateTableIsDistributed("tombstones") ? 1 : 0;
	}
	return tombstones_distributed == 1;
}

/* TombstonesInstalled; see tombstones.h. */
bool
TombstonesInstalled(void)
{
	return OidIsValid(IdemgateRelid("tombstones"));
}

/*
 * DigestInt64 reads the first 8 bytes of a digest as SQL's
 * TOMBSTONE_DIGEST does in SQL.
 */
static int64
DigestInt64(const uint8 *d)
{
	uint64		v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | d[i];
	return (int64) v;
}

/* TombstoneAttnum returns the number of column name of rel. */
static AttrNumber
TombstoneAttnum(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	elog(ERROR, "idemgate.tombstones has no column \"%s\"", name);
	return InvalidAttrNumber;	/* keep the compiler quiet */
}

/*
 * FindTombstone; see tombstones.h. A claim asks it between its probe of
 * the runs' primary key and its insert (src/ledger/claim_direct.c), so it reads
 * the table straight through its primary key, without SPI: a statement
 * there would advance the command counter and accept invalidations under
 * the claim's half-built insert. The snapshot is taken now, so a purge
 * that committed before the call is seen.
 */
bool
FindTombstone(text *key, Tombstone *t)
{
	Oid			relid = IdemgateRelid("tombstones");

	if (OidIsValid(relid) && IdemgateIsDistributed() && TombstonesDistributed())
		return FindTombstoneOnShard(key, t);
	return FindTombstoneHere(relid, key, t);
}

/*
 * On Citus (docs/citus.md) the rows are in the shards: one statement sent
 * to the key's shard (the claim's direct path, which this must not
 * disturb, is off there), in a snapshot taken now.
 */
static SavedStatement find_on_shard_stmt = {
	"SELECT t.payload_digest, t.final_state FROM idemgate.tombstones t"
	" WHERE t.key_digest OPERATOR(pg_catalog.=) $1/*@bucket t*//*@route $2*/",
	2, {INT8OID, TEXTOID}
};

/* FindTombstoneOnShard is FindTombstone on a distributed install. */
static bool
FindTombstoneOnShard(text *key, Tombstone *t)
{
	uint8		digest[32];
	Datum		values[2];
	bool		isnull;

	Sha256(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), digest);
	values[0] = Int64GetDatum(DigestInt64(digest));
	values[1] = PointerGetDatum(key);
	if (ExecSavedLatest(&find_on_shard_stmt, values, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up tombstone");
	if (SPI_processed == 0)
		return false;
	t->payload_digest = DatumGetInt64(GetResultDatum(0, 1, &isnull));
	t->final_state = DatumGetChar(GetResultDatum(0, 2, &isnull));
	return true;
}

/* FindTombstoneHere is FindTombstone on one node (see its comment). */
static bool
FindTombstoneHere(Oid relid, text *key, Tombstone *t)
{
	Relation	rel;
	Relation	idx;
	Oid			pkey;
	uint8		digest[32];
	ScanKeyData skey;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	bool		found = false;

	if (!OidIsValid(relid))
		return false;
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	/* Until purge kept a first tombstone a claim pays only this. */
	if (RelationGetNumberOfBlocks(rel) == 0 ||
		!OidIsValid(pkey = PrimaryKeyIndexOf(rel)))
	{
		relation_close(rel, AccessShareLock);
		return false;
	}
	Sha256(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), digest);

	idx = index_open(pkey, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&skey, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(DigestInt64(digest)));
	scan = BeginIndexScan(rel, idx, snapshot, 1, 0);
	index_rescan(scan, &skey, 1, NULL, 0);
	slot = table_slot_create(rel, NULL);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, TombstoneAttnum(rel, "payload_digest"), &isnull);

		if (!isnull)
		{
			t->payload_digest = DatumGetInt64(d);
			d = slot_getattr(slot, TombstoneAttnum(rel, "final_state"), &isnull);
			t->final_state = isnull ? '?' : DatumGetChar(d);
			found = true;
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	index_close(idx, AccessShareLock);
	relation_close(rel, AccessShareLock);
	return found;
}

/* TombstoneMatches; see tombstones.h. */
bool
TombstoneMatches(const Tombstone *t, bytea *payload_hash)
{
	return VARSIZE_ANY_EXHDR(payload_hash) >= 8 &&
		DigestInt64((const uint8 *) VARDATA_ANY(payload_hash)) == t->payload_digest;
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
							 "Pass how long tombstones are kept, e.g. interval '400 days' (see "
							 "idemgate.tombstone_retention).");
	ConnectSPI();
	ExecSavedExpect(&purge_stmt, (Datum *) &older_than, NULL, false, 0, SPI_OK_DELETE,
					"could not purge tombstones");
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
