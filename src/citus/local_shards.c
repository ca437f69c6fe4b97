/*-------------------------------------------------------------------------
 *
 * src/citus/local_shards.c
 *	  Routed statements on this node's own shard placements, as local
 *	  tables (docs/citus.md, "Local shards").
 *
 *	  Through Citus, every routed statement is planned twice per call: the
 *	  distributed planner prunes its shard from the bucket, then the shard
 *	  query is planned again for local execution (bench/citus: a worker
 *	  spent about ten times the single node's CPU per delivery). When the
 *	  bucket's shard is placed here, the statement runs instead on the shard
 *	  tables themselves ("idemgate.outbox_102041"), the reference tables on
 *	  their placement here, with a plan prepared once per shard and kept, as
 *	  on a single node.
 *
 *	  What keeps that correct when a shard moves or splits: Citus blocks the
 *	  writes of a shard group, on every node, with an exclusive lock on its
 *	  co-located shards' metadata (BlockWritesToShardList) before it copies
 *	  the last changes and switches the placement; its own writes take that
 *	  lock in share mode. Here every transaction takes it in share mode
 *	  before its first direct access to a shard, then reads the placement
 *	  again in a fresh snapshot: found here, the shard cannot move until
 *	  this transaction ends; found elsewhere (or the shards changed), the
 *	  statement goes through Citus, and the map is read again.
 *
 *	  Direct access is for statements that are their whole transaction's
 *	  business: the dispatcher's, and a claim or other call made outside a
 *	  transaction block. In a block, Citus keeps every statement, since
 *	  another statement of the block may have reached a shard here through
 *	  a connection of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "citus/distributed.h"
#include "citus/local_shards.h"
#include "core/guc.h"
#include "core/pg_compat.h"

/* Citus's lock class for a co-location group's shard metadata (resource_lock.h). */
#define CITUS_COLOCATED_SHARDS_METADATA_LOCK 8

/* One table of the map: per shard index its shard id (a reference table: [0]). */
typedef struct MappedTable
{
	char		name[NAMEDATALEN];
	Oid			relid;
	bool		reference;
	bool		usable;			/* has a local form */
	int64	   *shardids;
} MappedTable;

/* One shard index of runs' co-location group. */
typedef struct ShardGroup
{
	int32		min;			/* hash range */
	int64		runs_shardid;
	bool		local;			/* placed here, when last read */
	LocalTransactionId checked_in;	/* locked and re-read in that transaction */
} ShardGroup;

static struct
{
	bool		valid;
	uint32		generation;
	int			group_id;		/* this node's Citus group */
	Oid			runs_relid;
	uint32		colocation;
	int			nshards;
	ShardGroup *shards;
	int			ntables;
	MappedTable *tables;
	MemoryContext cxt;
} map;

/* Per transaction: whether a direct access or a multi-shard statement happened. */
static LocalTransactionId direct_in = InvalidLocalTransactionId;
static int	direct_bucket = -1;
static LocalTransactionId multi_shard_in = InvalidLocalTransactionId;

/* Every table Citus knows in schema idemgate, with its shards in hash order. */
static const char map_sql[] =
	"SELECT c.relname::pg_catalog.text, p.partmethod::pg_catalog.text, p.colocationid,"
	"       s.shardid, s.shardminvalue::pg_catalog.int4,"
	"       EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement pl"
	"               WHERE pl.shardid OPERATOR(pg_catalog.=) s.shardid"
	"                 AND pl.groupid OPERATOR(pg_catalog.=)"
	"                     (SELECT groupid FROM pg_catalog.pg_dist_local_group)),"
	"       EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a"
	"               WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid"
	"                 AND a.attidentity OPERATOR(pg_catalog.<>) ''),"
	"       (SELECT groupid FROM pg_catalog.pg_dist_local_group), c.oid"
	" FROM pg_catalog.pg_dist_partition p"
	" JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.logicalrelid"
	" JOIN pg_catalog.pg_dist_shard s ON s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid"
	" WHERE c.relnamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace"
	" ORDER BY c.relname, s.shardminvalue::pg_catalog.int4 NULLS FIRST";
static SPIPlanPtr map_plan = NULL;

/* Under the lock: is runs' shard $1 still placed in group $2, and how many shards are there. */
static const char placement_sql[] =
	"SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement"
	"               WHERE shardid OPERATOR(pg_catalog.=) $1"
	"                 AND groupid OPERATOR(pg_catalog.=) $2),"
	"       (SELECT pg_catalog.count(*)::pg_catalog.int4 FROM pg_catalog.pg_dist_shard"
	"        WHERE logicalrelid OPERATOR(pg_catalog.=) $3)";
static SPIPlanPtr placement_plan = NULL;

/*
 * ReadCatalog runs sql (prepared once into *plan) in a fresh snapshot,
 * inside an SPI connection of its own the caller ends with SPI_finish.
 * These reads stay below src/citus/statements.c, which calls this file.
 */
static uint64
ReadCatalog(const char *sql, SPIPlanPtr *plan, int nargs, Oid *types, Datum *args)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, nargs, types);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare a read of Citus's metadata: %s",
				 SPI_result_code_string(SPI_result));
		*plan = p;
	}
	if (SPI_execute_snapshot(*plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read Citus's metadata of idemgate's tables");
	return SPI_processed;
}

/* Column col (1-based) of row of the last result (NULL reads as 0). */
static Datum
Col(uint64 row, int col)
{
	bool		isnull;

	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
}

/* IdemgateRelationExists says whether idemgate.<name> is a relation. */
static bool
IdemgateRelationExists(const char *name)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid(name, nsp));
}

/* Citus's own routed read of a shard here: makes it run later tasks here in this backend. */
static SPIPlanPtr prime_plan = NULL;

/*
 * ForgetLocalShardMap drops the map when relid (InvalidOid: any) is one of
 * the tables it maps: Citus invalidates a distributed table's relation
 * cache entry when its shards or placements change. Called through
 * DistributedRelcacheHook (src/citus/distributed.c: PostgreSQL has ten
 * relation cache callback slots for every library of a backend).
 */
static void
ForgetLocalShardMap(Oid relid)
{
	if (!map.valid)
		return;
	if (relid == InvalidOid || relid == map.runs_relid)
	{
		map.valid = false;
		return;
	}
	for (int i = 0; i < map.ntables; i++)
	{
		/* Citus invalidates the distributed table's relcache on a metadata change. */
		if (map.tables[i].relid == relid)
		{
			map.valid = false;
			return;
		}
	}
}

/* LoadMap reads the map (map_stmt) in a fresh snapshot. */
static void
LoadMap(void)
{
	int			n;
	int			runs_shards = 0;

	if (map.cxt == NULL)
		map.cxt = AllocSetContextCreate(TopMemoryContext, "idemgate local shards",
										ALLOCSET_SMALL_SIZES);
	MemoryContextReset(map.cxt);
	DistributedRelcacheHook = ForgetLocalShardMap;
	map.valid = false;
	map.generation++;
	map.nshards = 0;
	map.ntables = 0;
	map.runs_relid = get_relname_relid("runs", get_namespace_oid("idemgate", false));

	n = (int) ReadCatalog(map_sql, &map_plan, 0, NULL, NULL);
	for (int i = 0; i < n; i++)
	{
		if (strcmp(TextDatumGetCString(Col(i, 1)), "runs") == 0)
		{
			runs_shards++;
			map.colocation = DatumGetUInt32(Col(i, 3));
		}
	}
	map.shards = MemoryContextAllocZero(map.cxt, sizeof(ShardGroup) * Max(runs_shards, 1));
	map.tables = MemoryContextAllocZero(map.cxt, sizeof(MappedTable) * Max(n, 1));
	for (int i = 0; i < n;)
	{
		char	   *name = TextDatumGetCString(Col(i, 1));
		char	   *method = TextDatumGetCString(Col(i, 2));
		uint32		colocation = DatumGetUInt32(Col(i, 3));
		bool		identity = DatumGetBool(Col(i, 7));
		MappedTable *t = &map.tables[map.ntables++];
		int			count = 0;
		bool		all_here = true;

		map.group_id = DatumGetInt32(Col(i, 8));
		strlcpy(t->name, name, NAMEDATALEN);
		t->relid = DatumGetObjectId(Col(i, 9));
		t->reference = method[0] == 'n';
		while (i + count < n && strcmp(TextDatumGetCString(Col(i + count, 1)), name) == 0)
			count++;
		t->shardids = MemoryContextAllocZero(map.cxt, sizeof(int64) * count);
		for (int k = 0; k < count; k++)
		{
			t->shardids[k] = DatumGetInt64(Col(i + k, 4));
			if (!DatumGetBool(Col(i + k, 6)))
				all_here = false;
		}
		if (strcmp(name, "runs") == 0)
		{
			map.nshards = count;
			for (int k = 0; k < count; k++)
			{
				map.shards[k].min = DatumGetInt32(Col(i + k, 5));
				map.shards[k].runs_shardid = t->shardids[k];
				map.shards[k].local = DatumGetBool(Col(i + k, 6));
				map.shards[k].checked_in = InvalidLocalTransactionId;
			}
		}

		/*
		 * A reference table reads its one placement here; a hash table of
		 * runs' co-location group goes shard by shard. A table whose rows
		 * take ids from a sequence keeps Citus: the shell's sequence (each
		 * node's range) makes them, not the shard's.
		 */
		if (t->reference)
			t->usable = count == 1 && all_here;
		else
			t->usable = method[0] == 'h' && !identity && count == runs_shards &&
				colocation == map.colocation;
		i += count;
	}
	SPI_finish();
	map.valid = map.nshards > 0;
	{
		int			here = 0;

		for (int k = 0; k < map.nshards; k++)
			here += map.shards[k].local ? 1 : 0;
		ereport(DEBUG1,
				(errmsg_internal("idemgate: %d of the %d shards of idemgate.runs are placed on this "
								 "node; routed statements on them run there directly",
								 here, map.nshards)));
	}
}

/* ShardIndexOf returns the shard index whose hash range holds bucket's hash. */
static int
ShardIndexOf(int bucket)
{
	int32		hash = DatumGetInt32(DirectFunctionCall1(hashint4, Int32GetDatum(bucket)));
	int			lo = 0;
	int			hi = map.nshards - 1;

	/* the last shard whose range starts at or below hash */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (map.shards[mid].min <= hash)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* DirectAccessAllowed: see the file's header. */
static bool
DirectAccessAllowed(void)
{
	const char *local_execution;

	if (!IdemgateCitusLocalShards || IsTransactionBlock())
		return false;
	if (multi_shard_in == MyLocalTransactionId)
		return false;
	/* Citus's own switch for running shards here: off means connections. */
	local_execution = GetConfigOption("citus.enable_local_execution", true, false);
	return local_execution == NULL || strcmp(local_execution, "on") == 0;
}

/* LocalShardFor; see local_shards.h. */
int
LocalShardFor(int bucket)
{
	ShardGroup *g;
	LOCKTAG		tag;
	Datum		args[3];
	Oid			placement_types[3] = {INT8OID, INT4OID, OIDOID};
	bool		here;
	int			count;
	int			shard;

	if (bucket < 0 || !DirectAccessAllowed())
		return -1;
	if (!map.valid)
		LoadMap();
	if (!map.valid)
		return -1;
	shard = ShardIndexOf(bucket);
	g = &map.shards[shard];
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) shard, map.colocation,
						 CITUS_COLOCATED_SHARDS_METADATA_LOCK);
	if (g->checked_in == MyLocalTransactionId && LockHeldByMeCompat(&tag, ShareLock))
		return g->local ? shard : -1;
	if (!g->local)
		return -1;				/* a shard that comes here forgets the map */

	/* Wait for a move or split in progress, then read the placement again. */
	(void) LockAcquire(&tag, ShareLock, false, false);
	AcceptInvalidationMessages();
	if (!map.valid)
		return -1;
	args[0] = Int64GetDatum(g->runs_shardid);
	args[1] = Int32GetDatum(map.group_id);
	args[2] = ObjectIdGetDatum(map.runs_relid);
	if (ReadCatalog(placement_sql, &placement_plan, 3, placement_types, args) != 1)
		elog(ERROR, "could not read the placement of shard " INT64_FORMAT, g->runs_shardid);
	here = DatumGetBool(Col(0, 1));
	count = DatumGetInt32(Col(0, 2));
	SPI_finish();
	if (!here || count != map.nshards)
	{
		map.valid = false;
		return -1;
	}
	g->checked_in = MyLocalTransactionId;
	direct_in = MyLocalTransactionId;
	direct_bucket = bucket;
	return shard;
}

/* MappedName returns the table's name on shard, NULL when it has no local form. */
static const char *
MappedName(const char *name, int shard, bool *known)
{
	*known = false;
	for (int i = 0; i < map.ntables; i++)
	{
		MappedTable *t = &map.tables[i];

		if (strcmp(t->name, name) != 0)
			continue;
		*known = true;
		if (!t->usable)
			return NULL;
		return psprintf("%s_" INT64_FORMAT, name, t->shardids[t->reference ? 0 : shard]);
	}
	return NULL;
}

/*
 * HasAlias says whether the table name that ended just before p has an
 * alias: a word after it that is not a keyword that can follow a table.
 */
static bool
HasAlias(const char *p)
{
	static const char *const follows[] = {
		"set", "where", "on", "join", "using", "left", "right", "inner", "cross", "full",
		"natural", "group", "order", "limit", "returning", "for", "window", "having",
		"union", "except", "intersect", "offset", "fetch", "default", "values", "select",
		"tablesample", "lateral", NULL
	};
	char		word[16];
	int			len = 0;

	while (*p == ' ' || *p == '\n' || *p == '\t')
		p++;
	while (((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') &&
		   len < (int) sizeof(word) - 1)
		word[len++] = pg_ascii_tolower((unsigned char) *p++);
	word[len] = '\0';
	if (len == 0)
		return false;
	for (int i = 0; follows[i] != NULL; i++)
		if (strcmp(word, follows[i]) == 0)
			return false;
	return true;					/* "AS x" or "x" */
}

/*
 * ShardSql returns sql with each idemgate table named by its placement on
 * shard, or NULL when one has no local form. Functions (a name followed
 * directly by "(", as every statement here writes them) and names that are
 * no relation keep their names.
 */
static char *
ShardSql(const char *sql, int shard)
{
	StringInfoData out;
	const char *p = sql;
	static const char prefix[] = "idemgate.";

	initStringInfo(&out);
	for (;;)
	{
		const char *m = strstr(p, prefix);
		const char *s;
		const char *e;
		char		name[NAMEDATALEN];
		const char *mapped;
		bool		known;

		if (m == NULL)
		{
			appendStringInfoString(&out, p);
			return out.data;
		}
		s = m + strlen(prefix);
		e = s;
		while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_')
			e++;
		appendBinaryStringInfo(&out, p, s - p);
		p = e;
		if (e - s == 0 || e - s >= NAMEDATALEN)
		{
			appendBinaryStringInfo(&out, s, e - s);
			continue;
		}
		memcpy(name, s, e - s);
		name[e - s] = '\0';
		/* a function: "idemgate.f(" (a column list follows a space) */
		if (*e == '(')
		{
			appendStringInfoString(&out, name);
			continue;
		}
		/* a row type ("::idemgate.runs") or a qualified column: keep Citus */
		if ((m > sql && m[-1] == ':') || *e == '.' || *e == '%')
			return NULL;
		mapped = MappedName(name, shard, &known);
		if (mapped != NULL)
		{
			appendStringInfoString(&out, mapped);
			/* the statement may name it unaliased ("outbox.bucket") */
			if (!HasAlias(e))
				appendStringInfo(&out, " AS %s", name);
		}
		else if (!known && !IdemgateRelationExists(name))
			appendStringInfoString(&out, name); /* a type */
		else
			return NULL;
	}
}

/* FreeForms drops a statement's local plans (the map changed). */
static void
FreeForms(LocalForms *f)
{
	for (int i = 0; i < f->nshards; i++)
	{
		if (f->routed[i])
			SPI_freeplan(f->routed[i]);
		if (f->in_buckets[i])
			SPI_freeplan(f->in_buckets[i]);
		if (f->whole[i])
			SPI_freeplan(f->whole[i]);
	}
	pfree(f->routed);
	pfree(f->routed_planned);
	pfree(f->in_buckets);
	pfree(f->in_buckets_planned);
	pfree(f->whole);
	pfree(f->whole_planned);
	pfree(f);
}

/* LocalShardPlan; see local_shards.h. */
SPIPlanPtr
LocalShardPlan(LocalForms **forms, const char *sql, RouteSqlFn route, int route_n,
			   int nargs, const Oid *argtypes, int cursor_options, int shard,
			   LocalForm form, bool **planned)
{
	LocalForms *f = *forms;
	SPIPlanPtr *slot;
	char	   *routed;
	char	   *shard_sql;

	if (f != NULL && f->generation != map.generation)
	{
		bool		refused = f->refused;

		FreeForms(f);
		*forms = f = NULL;
		if (refused)
			return NULL;		/* a table's form does not come back */
	}
	if (f == NULL)
	{
		f = MemoryContextAllocZero(TopMemoryContext, sizeof(LocalForms));
		f->generation = map.generation;
		f->nshards = map.nshards;
		f->routed = MemoryContextAllocZero(TopMemoryContext, sizeof(SPIPlanPtr) * map.nshards);
		f->routed_planned = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * map.nshards);
		f->in_buckets = MemoryContextAllocZero(TopMemoryContext, sizeof(SPIPlanPtr) * map.nshards);
		f->in_buckets_planned = MemoryContextAllocZero(TopMemoryContext,
													   sizeof(bool) * map.nshards);
		f->whole = MemoryContextAllocZero(TopMemoryContext, sizeof(SPIPlanPtr) * map.nshards);
		f->whole_planned = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * map.nshards);
		*forms = f;
	}
	if (f->refused)
		return NULL;
	switch (form)
	{
		case LOCAL_IN_BUCKETS:
			slot = &f->in_buckets[shard];
			*planned = &f->in_buckets_planned[shard];
			break;
		case LOCAL_WHOLE:
			slot = &f->whole[shard];
			*planned = &f->whole_planned[shard];
			break;
		default:
			slot = &f->routed[shard];
			*planned = &f->routed_planned[shard];
			break;
	}
	if (*slot != NULL)
		return *slot;
	routed = route(sql, route_n);
	shard_sql = ShardSql(routed, shard);
	pfree(routed);
	if (shard_sql == NULL)
	{
		f->refused = true;
		return NULL;
	}
	*slot = SPI_prepare_cursor(shard_sql, nargs, unconstify(Oid *, argtypes), cursor_options);
	if (*slot == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", shard_sql,
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(*slot) != 0)
		elog(ERROR, "SPI_keepplan failed");
	**planned = false;
	pfree(shard_sql);
	return *slot;
}

/* BeforeMultiShardStatement; see local_shards.h. */
void
BeforeMultiShardStatement(void)
{
	Datum		bucket;

	multi_shard_in = MyLocalTransactionId;
	if (direct_in != MyLocalTransactionId)
		return;
	if (prime_plan == NULL)
	{
		Oid			type = INT4OID;

		prime_plan = SPI_prepare_cursor("SELECT 1 FROM idemgate.runs"
										" WHERE bucket OPERATOR(pg_catalog.=) $1"
										"   AND idempotency_key IS NULL",
										1, &type, CURSOR_OPT_CUSTOM_PLAN);
		if (prime_plan == NULL || SPI_keepplan(prime_plan) != 0)
			elog(ERROR, "could not prepare idemgate's local execution check");
	}
	bucket = Int32GetDatum(direct_bucket);
	if (SPI_execute_plan(prime_plan, &bucket, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not run idemgate's local execution check");
	direct_in = InvalidLocalTransactionId;
}
