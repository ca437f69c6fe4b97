/*-------------------------------------------------------------------------
 *
 * src/citus/shard_buckets.c
 *	  The shards of a distributed install as sets of buckets (docs/citus.md).
 *
 *	  A scan that locks rows (the dispatcher's claim, expired leases,
 *	  expired approvals) cannot run on every shard at once on Citus: it
 *	  runs once per shard, with "bucket = ANY (<the buckets of that
 *	  shard>)", which Citus sends to that one shard (executed locally when
 *	  the placement is here). A shard's buckets follow from its hash range
 *	  (Citus hashes the bucket with worker_hash) and never change for a
 *	  shard id, so they are computed once per shard and kept; which shards
 *	  are placed here is read again at every call, from the metadata Citus
 *	  keeps on each node, so a moved shard is scanned where it now lives.
 *	  On this node's own shards, ShardBucketsWithWork first narrows the
 *	  buckets to those that hold work, read from the shard table itself.
 *	  Going through Citus, never to the shard table itself, keeps a shard
 *	  move's write blocking and the row locks in force.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "citus/shard_buckets.h"
#include "citus/statements.h"

static HTAB *shard_buckets = NULL;

/* The shards of runs (every per-run table is co-located with it). */
static SavedStatement shards_stmt = {
	"SELECT s.shardid, s.shardminvalue::pg_catalog.int4, s.shardmaxvalue::pg_catalog.int4"
	" FROM pg_catalog.pg_dist_shard s"
	" WHERE s.logicalrelid OPERATOR(pg_catalog.=) 'idemgate.runs'::pg_catalog.regclass"
	"   AND ($1 OR EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p"
	"                      WHERE p.shardid OPERATOR(pg_catalog.=) s.shardid"
	"                        AND p.groupid OPERATOR(pg_catalog.=)"
	"                            (SELECT groupid FROM pg_catalog.pg_dist_local_group)))"
	" ORDER BY s.shardid",
	1, {BOOLOID}
};

static SavedStatement buckets_stmt = {
	"SELECT pg_catalog.array_agg(b ORDER BY b)"
	" FROM pg_catalog.generate_series(0, 65535) b"
	" WHERE pg_catalog.worker_hash(b) OPERATOR(pg_catalog.>=) $1"
	"   AND pg_catalog.worker_hash(b) OPERATOR(pg_catalog.<=) $2",
	2, {INT4OID, INT4OID}
};

static SavedStatement local_group_stmt = {
	"SELECT groupid FROM pg_catalog.pg_dist_local_group",
	0, {InvalidOid}
};

/* LocalGroupId returns this node's Citus group (0 on the coordinator). */
int
LocalGroupId(void)
{
	bool		isnull;
	int			group;

	ConnectSPI();
	group = DatumGetInt32(ExecSavedValue(&local_group_stmt, NULL, NULL, true, SPI_OK_SELECT,
										 "could not read pg_dist_local_group", &isnull));
	SPI_finish();
	return group;
}

/*
 * ShardBucketSets returns the shards in scope (ShardSet *, whose buckets
 * are an int4[] datum), in a list in the caller's memory context. Must be
 * called in a transaction.
 */
List *
ShardBucketSets(ShardScope scope)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *sets = NIL;
	Datum		all;
	int64	   *ids;
	int32	   *mins;
	int32	   *maxs;
	int			n;

	if (shard_buckets == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(ShardSet);
		shard_buckets = hash_create("idemgate shard buckets", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	ConnectSPI();
	all = BoolGetDatum(scope == SHARDS_SCAN && LocalGroupId() == 0);
	ExecSavedExpect(&shards_stmt, &all, NULL, true, 0, SPI_OK_SELECT,
					"could not read the shards of idemgate.runs");
	n = (int) SPI_processed;
	ids = MemoryContextAlloc(caller, sizeof(int64) * (n + 1));
	mins = MemoryContextAlloc(caller, sizeof(int32) * (n + 1));
	maxs = MemoryContextAlloc(caller, sizeof(int32) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(GetResultDatum(i, 1, &isnull));
		mins[i] = DatumGetInt32(GetResultDatum(i, 2, &isnull));
		maxs[i] = DatumGetInt32(GetResultDatum(i, 3, &isnull));
	}
	for (int i = 0; i < n; i++)
	{
		bool		found;
		ShardSet   *e = hash_search(shard_buckets, &ids[i], HASH_FIND, &found);

		if (!found)
		{
			Datum		range[2] = {Int32GetDatum(mins[i]), Int32GetDatum(maxs[i])};
			bool		isnull;
			Datum		arr;
			Datum		kept;
			MemoryContext old;

			if (ExecSaved(&buckets_stmt, range, NULL, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not compute the buckets of shard " INT64_FORMAT, ids[i]);
			arr = GetResultDatum(0, 1, &isnull);
			old = MemoryContextSwitchTo(TopMemoryContext);
			kept = isnull ? PointerGetDatum(construct_empty_array(INT4OID)) :
				PointerGetDatum(DatumGetArrayTypePCopy(arr));
			MemoryContextSwitchTo(old);
			e = hash_search(shard_buckets, &ids[i], HASH_ENTER, &found);
			e->buckets = kept;
			memset(e->relid, 0, sizeof(e->relid));
			memset(e->plan, 0, sizeof(e->plan));
		}
		e->local = !DatumGetBool(all);
		{
			MemoryContext old = MemoryContextSwitchTo(caller);

			sets = lappend(sets, e);
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	return sets;
}

/* The shard of table $2 co-located with runs shard $1. */
static SavedStatement colocated_shard_stmt = {
	"SELECT o.shardid FROM pg_catalog.pg_dist_shard r"
	" JOIN pg_catalog.pg_dist_shard o ON o.shardminvalue OPERATOR(pg_catalog.=) r.shardminvalue"
	" WHERE r.shardid OPERATOR(pg_catalog.=) $1"
	"   AND o.logicalrelid OPERATOR(pg_catalog.=) $2::pg_catalog.regclass",
	2, {INT8OID, TEXTOID}
};

/* Per kind of work: the table, and which of its rows are work to do now. */
static const struct
{
	const char *table;
	const char *rows;
}			shard_work[SHARD_WORK_KINDS] = {
	[SHARD_DUE_EFFECTS] = {"outbox",
		"state OPERATOR(pg_catalog.=) 'pending'"
	" AND next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"},
	[SHARD_EXPIRED_LEASES] = {"outbox",
		"state OPERATOR(pg_catalog.=) 'sending'"
	" AND lease_expires_at OPERATOR(pg_catalog.<) pg_catalog.now()"},
	[SHARD_EXPIRED_APPROVALS] = {"approvals",
		"consumed_at IS NULL AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()"},
	[SHARD_UNKNOWN_EFFECTS] = {"outbox",
		"state OPERATOR(pg_catalog.=) 'unknown'"},
	[SHARD_APPROVED_RUNS] = {"runs",
		"state OPERATOR(pg_catalog.=) 'approved'"},
};

/*
 * WorkTable finds this node's shard table of set for work (set->relid),
 * first dropping the kept look-up of one that is gone (the shard moved
 * away); false when there is none here. Must be called inside SPI.
 */
static bool
WorkTable(ShardSet *set, ShardWork work)
{
	bool		isnull;
	char		name[NAMEDATALEN];
	Datum		args[2];

	if (OidIsValid(set->relid[work]) &&
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(set->relid[work])))
	{
		if (set->plan[work])
			SPI_freeplan((SPIPlanPtr) set->plan[work]);
		set->plan[work] = NULL;
		set->relid[work] = InvalidOid;
	}
	if (OidIsValid(set->relid[work]))
		return true;
	args[0] = Int64GetDatum(set->shardid);
	args[1] = CStringGetTextDatum(psprintf("idemgate.%s", shard_work[work].table));
	if (ExecSaved(&colocated_shard_stmt, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return false;
	snprintf(name, sizeof(name), "%s_" INT64_FORMAT, shard_work[work].table,
			 DatumGetInt64(GetResultDatum(0, 1, &isnull)));
	set->relid[work] = get_relname_relid(name, get_namespace_oid("idemgate", false));
	return OidIsValid(set->relid[work]);
}

/*
 * ShardBucketsWithWork returns the buckets of set's shard that hold work
 * of that kind (int4[]), or 0 when none does. A scan sent with all the
 * shard's ~2,048 buckets costs Citus's planner and PostgreSQL's some
 * milliseconds (bench/citus), work or not: this look-up reads this node's
 * own shard table instead, one index scan, and the scan then goes through
 * Citus with the few buckets that have work. It only narrows the scan,
 * which still checks and locks every row; what becomes due after it is
 * found by the next round. For a shard that is not on this node (the
 * coordinator scans them all; a shard may have moved away), it returns all
 * the shard's buckets, as before. Must be called inside SPI.
 */
Datum
ShardBucketsWithWork(ShardSet *set, ShardWork work)
{
	bool		isnull;
	Datum		found;

	if (!set->local || !WorkTable(set, work))
		return set->buckets;
	if (set->plan[work] == NULL)
	{
		char	   *sql;
		SPIPlanPtr	plan;

		sql = psprintf("SELECT pg_catalog.array_agg(DISTINCT bucket) FROM idemgate.%s WHERE %s",
					   quote_identifier(get_rel_name(set->relid[work])), shard_work[work].rows);
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		set->plan[work] = plan;
	}
	if (SPI_execute_plan((SPIPlanPtr) set->plan[work], NULL, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the work of shard " INT64_FORMAT, set->shardid);
	found = GetResultDatum(0, 1, &isnull);
	return isnull ? (Datum) 0 : found;
}

/*
 * The look-up of one kind of work on every shard table placed here, in
 * one statement (AnyShardHasWork), kept while the same tables are here.
 */
typedef struct NodeWorkProbe
{
	SPIPlanPtr	plan;
	int			ntables;
	Oid		   *relids;			/* TopMemoryContext */
} NodeWorkProbe;

static NodeWorkProbe node_probe[SHARD_WORK_KINDS];

/*
 * AnyShardHasWork says whether any of sets (this node's shards) may hold
 * work of that kind: false only when none does, read from the shard
 * tables here in one statement. A worker's dispatcher polls each of its
 * shards every second for due effects and for effects to look up; with
 * nothing to do, that was 30-odd statements a second (bench/README), now
 * two. Like ShardBucketsWithWork it only narrows. True for a shard not on
 * this node or whose table is not found (the per-shard path decides).
 * Must be called inside SPI.
 */
bool
AnyShardHasWork(List *sets, ShardWork work)
{
	NodeWorkProbe *p = &node_probe[work];
	Oid		   *relids = palloc(sizeof(Oid) * (list_length(sets) + 1));
	int			n = 0;
	ListCell   *lc;
	bool		isnull;

	foreach(lc, sets)
	{
		ShardSet   *set = lfirst(lc);

		if (!set->local || !WorkTable(set, work))
			return true;
		relids[n++] = set->relid[work];
	}
	if (n == 0)
		return false;
	if (p->plan == NULL || p->ntables != n || memcmp(p->relids, relids, sizeof(Oid) * n) != 0)
	{
		StringInfoData sql;

		if (p->plan != NULL)
			SPI_freeplan(p->plan);
		p->plan = NULL;
		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT");
		for (int i = 0; i < n; i++)
			appendStringInfo(&sql, "%s EXISTS (SELECT 1 FROM idemgate.%s WHERE %s)",
							 i > 0 ? " OR" : "", quote_identifier(get_rel_name(relids[i])),
							 shard_work[work].rows);
		p->plan = SPI_prepare(sql.data, 0, NULL);
		if (p->plan == NULL)
			elog(ERROR, "could not prepare \"%s\": %s", sql.data,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(p->plan);
		if (p->relids != NULL)
			pfree(p->relids);
		p->relids = MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * n);
		memcpy(p->relids, relids, sizeof(Oid) * n);
		p->ntables = n;
	}
	if (SPI_execute_plan(p->plan, NULL, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the work of this node's shards");
	return DatumGetBool(GetResultDatum(0, 1, &isnull));
}
