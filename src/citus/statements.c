/*-------------------------------------------------------------------------
 *
 * src/citus/statements.c
 *	  Saved SPI plans: each statement is parsed and planned once per
 *	  backend, then reused. Statements are parameterised; no value is ever
 *	  spliced into SQL text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"

#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "catalog/pg_type.h"
#include "utils/uuid.h"

#include "citus/distributed.h"
#include "citus/local_shards.h"
#include "citus/statements.h"

/*
 * Routing on Citus (docs/citus.md). A statement on a per-run table names
 * the parameter its bucket comes from and where the bucket goes, in SQL
 * comments that a single node ignores:
 *
 *   / *@route $k* /       the bucket comes from $k: a key (text), an effect
 *                        or approval id (uuid) or a bucket (integer)
 *   / *@bucket a* /       becomes " AND a.bucket = $N" (a: an alias, or none)
 *   / *@bucket_col* /     becomes ", bucket" in an INSERT's column list
 *   / *@bucket_val* /     becomes ", $N" in its VALUES
 *   / *@id_col* /, / *@id_overriding* /, / *@id_val* /   a dead letter's id
 *                        that carries its bucket (src/citus/distributed.c)
 *   / *@buckets a* /      becomes " AND a.bucket = ANY ($N)" in a scan made
 *                        one shard at a time (ExecSavedInBuckets, $N the
 *                        buckets of that shard), and nothing otherwise
 *   / *@join a b* /       becomes " AND a.bucket = b.bucket" (a co-located
 *                        join, which Citus needs on the distribution column)
 *
 * where $N is one more parameter than the statement has. On a distributed
 * install such a statement runs in that second form, with $N the bucket,
 * so Citus sends it to one shard. A statement without a route, or whose
 * id or token carries no bucket (made before distribute()), runs on every
 * shard, with only its joins expanded (N = 0 below).
 */

/*
 * RouteArg finds the / *@route $k* / marker: k; ROUTE_NONE for a statement
 * without markers, ROUTE_ANY for one with markers but no route.
 */
#define ROUTE_NONE (-1)
#define ROUTE_ANY (-2)
static int
RouteArg(const char *sql)
{
	const char *m = strstr(sql, "/*@route $");

	if (m)
		return atoi(m + strlen("/*@route $"));
	return strstr(sql, "/*@") ? ROUTE_ANY : ROUTE_NONE;
}

/*
 * RoutedSql expands the markers for parameter $n (see above): n > 0 a
 * bucket, n < 0 an array of buckets ($-n), n = 0 none.
 */
static char *
RoutedSql(const char *sql, int n)
{
	StringInfoData out;
	const char *p = sql;

	initStringInfo(&out);
	for (;;)
	{
		const char *m = strstr(p, "/*@");
		const char *end;
		char		word[64];
		char		alias[64];
		char		other[64];
		int			len;

		if (m == NULL)
		{
			appendStringInfoString(&out, p);
			break;
		}
		appendBinaryStringInfo(&out, p, m - p);
		end = strstr(m, "*/");
		if (end == NULL)
			elog(ERROR, "unterminated routing marker in \"%s\"", sql);
		len = end - (m + 3);
		if (len >= (int) sizeof(word))
			elog(ERROR, "routing marker too long in \"%s\"", sql);
		memcpy(word, m + 3, len);
		word[len] = '\0';
		alias[0] = '\0';
		if (strncmp(word, "route ", 6) == 0)
			 /* dropped */ ;
		else if (strcmp(word, "bucket_col") == 0 && n > 0)
			appendStringInfoString(&out, ", bucket");
		else if (strcmp(word, "bucket_val") == 0 && n > 0)
			appendStringInfo(&out, ", $%d", n);
		else if (strcmp(word, "id_col") == 0 && n > 0)
			appendStringInfoString(&out, ", id");
		else if (strcmp(word, "id_overriding") == 0 && n > 0)
			appendStringInfoString(&out, " OVERRIDING SYSTEM VALUE");
		else if (strcmp(word, "id_val") == 0 && n > 0)
			appendStringInfo(&out, ", idemgate.routed_id($%d)", n);
		else if (strcmp(word, "bucket") == 0)
		{
			if (n > 0)
				appendStringInfo(&out, " AND bucket OPERATOR(pg_catalog.=) $%d", n);
		}
		else if (sscanf(word, "buckets %63s", alias) == 1)
		{
			if (n < 0)
				appendStringInfo(&out, " AND %s.bucket OPERATOR(pg_catalog.=) ANY ($%d)", alias,
								 -n);
		}
		else if (sscanf(word, "join %63s %63s", alias, other) == 2)
			appendStringInfo(&out, " AND %s.bucket OPERATOR(pg_catalog.=) %s.bucket", alias, other);
		else if (sscanf(word, "bucket %63s", alias) == 1)
		{
			if (n > 0)
				appendStringInfo(&out, " AND %s.bucket OPERATOR(pg_catalog.=) $%d", alias, n);
		}
		else
			elog(ERROR, "unknown routing marker \"%s\"", word);
		p = end + 2;
	}
	return out.data;
}

/*
 * RouteBucket returns the bucket of a routed statement's call, or -1 when
 * its route parameter carries none.
 */
static int
RouteBucket(SavedStatement *stmt, Datum *values, const char *nulls)
{
	int			k = stmt->route_arg - 1;
	Oid			type = stmt->argtypes[k];
	bool		isnull = nulls != NULL && nulls[k] == 'n';

	if (type == TEXTOID)
	{
		text	   *key;

		if (isnull)
			return IDEMGATE_KEYLESS_BUCKET;
		key = DatumGetTextPP(values[k]);
		return KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	}
	if (isnull)
		return -1;
	if (type == UUIDOID)
	{
		int			bucket = UuidBucket(DatumGetUUIDP(values[k]));

		return bucket >= 0 ? bucket : LegacyUuidBucket(DatumGetUUIDP(values[k]));
	}
	if (type == UUIDARRAYOID)
	{
		Datum	   *ids;
		bool	   *inulls;
		int			nids;
		int			bucket = -2;

		deconstruct_array(DatumGetArrayTypeP(values[k]), UUIDOID, UUID_LEN, false, TYPALIGN_CHAR,
						  &ids, &inulls, &nids);
		for (int i = 0; i < nids; i++)
		{
			int			b = inulls[i] ? -1 : UuidBucket(DatumGetUUIDP(ids[i]));

			if (bucket != -2 && b != bucket)
				elog(ERROR, "ids of several buckets in one routed statement: \"%s\"", stmt->sql);
			bucket = b;
		}
		return bucket == -2 ? -1 : bucket;
	}
	if (type == TEXTARRAYOID)
	{
		Datum	   *keys;
		bool	   *knulls;
		int			nkeys;
		int			bucket = -1;

		deconstruct_array(DatumGetArrayTypeP(values[k]), TEXTOID, -1, false, TYPALIGN_INT,
						  &keys, &knulls, &nkeys);
		for (int i = 0; i < nkeys; i++)
		{
			text	   *key = DatumGetTextPP(keys[i]);
			int			b = knulls[i] ? IDEMGATE_KEYLESS_BUCKET :
				KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));

			if (bucket >= 0 && b != bucket)
				elog(ERROR, "keys of several buckets in one routed statement: \"%s\"", stmt->sql);
			bucket = b;
		}
		return bucket;
	}
	if (type == INT4OID)
		return DatumGetInt32(values[k]);
	if (type == INT8OID)
	{
		int			bucket = RoutedIdBucket(DatumGetInt64(values[k]));

		return bucket >= 0 ? bucket : LegacyDeadLetterBucket(DatumGetInt64(values[k]));
	}
	elog(ERROR, "routing parameter $%d of \"%s\" is of type %u", k + 1, stmt->sql, type);
}

/* ConnectSPI connects to SPI or raises an error. */
void
ConnectSPI(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

static int	ExecPlan(const char *sql, SPIPlanPtr plan, bool *planned, int cursor_options,
					 Datum *values, const char *nulls, bool read_only, long count,
					 Snapshot snapshot);
static int	ExecRouted(SavedStatement *stmt, Datum *values, const char *nulls,
					   bool read_only, long count, Snapshot snapshot, int bucket);

/*
 * ExecSavedIn runs a saved statement, preparing it on first use, in
 * snapshot (InvalidSnapshot: as SPI chooses, the transaction's in
 * REPEATABLE READ and SERIALIZABLE) and returns the SPI result code. Errors
 * from the statement propagate as usual.
 */
static int
ExecSavedIn(SavedStatement *stmt, Datum *values, const char *nulls,
			bool read_only, long count, Snapshot snapshot)
{
	if (stmt->route_arg == 0)
		stmt->route_arg = RouteArg(stmt->sql);
	if (stmt->route_arg != ROUTE_NONE && IdemgateIsDistributed())
	{
		int			bucket = stmt->route_arg > 0 ? RouteBucket(stmt, values, nulls) : -1;

		return ExecRouted(stmt, values, nulls, read_only, count, snapshot, bucket);
	}

	if (stmt->plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(stmt->sql, stmt->nargs, stmt->argtypes,
											  stmt->cursor_options);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 stmt->sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		stmt->plan = plan;
		stmt->planned = false;
	}
	return ExecPlan(stmt->sql, stmt->plan, &stmt->planned, stmt->cursor_options,
					values, nulls, read_only, count, snapshot);
}

/*
 * ExecPlan runs a prepared plan (see ExecSavedIn): the generic plan of a
 * statement that asks for one is made with index scans only.
 */
static int
ExecPlan(const char *sql, SPIPlanPtr plan, bool *planned, int cursor_options,
		 Datum *values, const char *nulls, bool read_only, long count,
		 Snapshot snapshot)
{
	int			rc;
	int			nest = 0;
	bool		planning;

	planning = (cursor_options & CURSOR_OPT_GENERIC_PLAN) &&
		(!*planned || !SPI_plan_is_valid(plan));
	if (planning)
	{
		/*
		 * This execution makes the generic plan: index scans only, and no
		 * JIT. A generic plan's cost counts a LIMIT $n as a fraction of the
		 * table, so with a large outbox it passed jit_above_cost and every
		 * later execution compiled its expressions with LLVM first: 65% of
		 * the pull API's CPU with 200,000 effects (bench/pull).
		 */
		nest = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	if (snapshot == InvalidSnapshot)
		rc = SPI_execute_plan(plan, values, nulls, read_only, count);
	else
		rc = SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot,
								  read_only, true, count);
	if (planning)
	{
		AtEOXact_GUC(true, nest);
		*planned = true;
	}
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed for \"%s\": %s",
			 sql, SPI_result_code_string(rc));
	return rc;
}

/*
 * DistCursorOptions: Citus finds the shard of a statement from its
 * parameters' values, so the distributed forms are planned for each call.
 */
static int
DistCursorOptions(const SavedStatement *stmt)
{
	return (stmt->cursor_options & ~CURSOR_OPT_GENERIC_PLAN) | CURSOR_OPT_CUSTOM_PLAN;
}

/*
 * PrepareDistForm prepares and keeps a distributed form of a statement
 * (see RoutedSql for n), with extra_type as its last parameter's type, or
 * no extra parameter when extra_type is InvalidOid.
 */
static SPIPlanPtr
PrepareDistForm(SavedStatement *stmt, int n, Oid extra_type)
{
	Oid			types[lengthof(stmt->argtypes) + 1];
	int			nargs = stmt->nargs;
	char	   *sql = RoutedSql(stmt->sql, n);
	SPIPlanPtr	plan;

	memcpy(types, stmt->argtypes, sizeof(Oid) * stmt->nargs);
	if (OidIsValid(extra_type))
		types[nargs++] = extra_type;
	plan = SPI_prepare_cursor(sql, nargs, types, DistCursorOptions(stmt));
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	pfree(sql);
	return plan;
}

/* WithExtraParam copies a call's parameters and appends value as the last. */
static void
WithExtraParam(const SavedStatement *stmt, Datum *values, const char *nulls,
			   Datum value, Datum *rvalues, char *rnulls)
{
	for (int i = 0; i < stmt->nargs; i++)
	{
		rvalues[i] = values[i];
		rnulls[i] = nulls ? nulls[i] : ' ';
	}
	rvalues[stmt->nargs] = value;
	rnulls[stmt->nargs] = ' ';
}

/* FirstBucket returns the first of an int4[] of buckets, -1 for none. */
static int
FirstBucket(Datum buckets)
{
	ArrayType  *a = DatumGetArrayTypeP(buckets);

	if (ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] < 1 || ARR_HASNULL(a))
		return -1;
	return ((int32 *) ARR_DATA_PTR(a))[0];
}

/*
 * ExecOnLocalShard runs the distributed form n of stmt (see RoutedSql; its
 * last parameter of extra_type already in rvalues) on the shard of bucket
 * when it is placed here and usable directly (src/citus/local_shards.c),
 * setting *rc; false when the statement must go through Citus.
 */
static bool
ExecOnLocalShard(SavedStatement *stmt, int n, Oid extra_type, int bucket, Datum *rvalues,
				 const char *rnulls, bool read_only, long count, Snapshot snapshot, int *rc)
{
	Oid			types[lengthof(stmt->argtypes) + 1];
	int			shard = LocalShardFor(bucket);
	SPIPlanPtr	plan;
	bool	   *planned;

	if (shard < 0)
		return false;
	memcpy(types, stmt->argtypes, sizeof(Oid) * stmt->nargs);
	types[stmt->nargs] = extra_type;
	plan = LocalShardPlan(&stmt->local, stmt->sql, RoutedSql, n, stmt->nargs + 1, types,
						  stmt->cursor_options, shard,
						  n < 0 ? LOCAL_IN_BUCKETS : LOCAL_ROUTED, &planned);
	if (plan == NULL)
		return false;
	*rc = ExecPlan(stmt->sql, plan, planned, stmt->cursor_options, rvalues, rnulls,
				   read_only, count, snapshot);
	return true;
}

/*
 * ExecSavedInBuckets runs a scan of the per-run tables on the shard whose
 * buckets are the int4[] buckets (its / *@buckets* / markers), or, when
 * buckets is 0 or the install is not distributed, as ExecSaved does.
 */
int
ExecSavedInBuckets(SavedStatement *stmt, Datum *values, const char *nulls,
				   bool read_only, long count, Datum buckets)
{
	int			n = stmt->nargs + 1;
	Datum		rvalues[lengthof(stmt->argtypes) + 1];
	char		rnulls[lengthof(stmt->argtypes) + 1];
	int			rc;

	if (buckets == (Datum) 0 || !IdemgateIsDistributed())
		return ExecSaved(stmt, values, nulls, read_only, count);
	WithExtraParam(stmt, values, nulls, buckets, rvalues, rnulls);
	if (ExecOnLocalShard(stmt, -n, INT4ARRAYOID, FirstBucket(buckets), rvalues, rnulls,
						 read_only, count, InvalidSnapshot, &rc))
		return rc;
	if (stmt->shard_plan == NULL)
		stmt->shard_plan = PrepareDistForm(stmt, -n, INT4ARRAYOID);
	return ExecPlan(stmt->sql, stmt->shard_plan, &stmt->shard_planned, 0,
					rvalues, rnulls, read_only, count, InvalidSnapshot);
}

/*
 * ExecSavedOnShard runs stmt on this node's shard of bucket, as the shard's
 * own tables, without its bucket tests (its / *@join* / markers kept):
 * for a statement whose rows are named by ids or keys unique across the
 * table, all of them on that shard, such as a batch of a dispatcher's
 * effects grouped by shard. The snapshot is the transaction's, or the
 * latest with latest. Returns the SPI result code, or -1 when the shard is
 * not placed here or the statement has no local form: the caller then
 * goes one bucket at a time.
 */
int
ExecSavedOnShard(SavedStatement *stmt, Datum *values, const char *nulls, bool read_only,
				 long count, bool latest, int bucket)
{
	int			shard;
	SPIPlanPtr	plan;
	bool	   *planned;

	if (!IdemgateIsDistributed() || (shard = LocalShardFor(bucket)) < 0)
		return -1;
	plan = LocalShardPlan(&stmt->local, stmt->sql, RoutedSql, 0, stmt->nargs, stmt->argtypes,
						  stmt->cursor_options, shard, LOCAL_WHOLE, &planned);
	if (plan == NULL)
		return -1;
	return ExecPlan(stmt->sql, plan, planned, stmt->cursor_options, values, nulls,
					read_only, count, latest ? GetLatestSnapshot() : InvalidSnapshot);
}

/*
 * ExecRouted runs the distributed form of a statement (see "Routing on
 * Citus"), preparing it on first use: with bucket as its last parameter,
 * or, when bucket < 0, on every shard.
 */
static int
ExecRouted(SavedStatement *stmt, Datum *values, const char *nulls,
		   bool read_only, long count, Snapshot snapshot, int bucket)
{
	int			n = stmt->nargs + 1;
	Datum		rvalues[lengthof(stmt->argtypes) + 1];
	char		rnulls[lengthof(stmt->argtypes) + 1];
	int			rc;

	if (bucket < 0)
	{
		BeforeMultiShardStatement();
		if (stmt->dist_any_plan == NULL)
		{
			stmt->dist_any_plan = PrepareDistForm(stmt, 0, InvalidOid);
			stmt->dist_any_planned = false;
		}
		return ExecPlan(stmt->sql, stmt->dist_any_plan, &stmt->dist_any_planned,
						0, values, nulls, read_only, count, snapshot);
	}
	WithExtraParam(stmt, values, nulls, Int32GetDatum(bucket), rvalues, rnulls);
	if (ExecOnLocalShard(stmt, n, INT4OID, bucket, rvalues, rnulls, read_only, count,
						 snapshot, &rc))
		return rc;
	if (stmt->dist_plan == NULL)
	{
		stmt->dist_plan = PrepareDistForm(stmt, n, INT4OID);
		stmt->dist_planned = false;
	}
	return ExecPlan(stmt->sql, stmt->dist_plan, &stmt->dist_planned, 0,
					rvalues, rnulls, read_only, count, snapshot);
}

/*
 * ExecSaved runs a saved statement, preparing it on first use, and returns
 * the SPI result code. Errors from the statement propagate as usual.
 */
int
ExecSaved(SavedStatement *stmt, Datum *values, const char *nulls,
		  bool read_only, long count)
{
	return ExecSavedIn(stmt, values, nulls, read_only, count, InvalidSnapshot);
}

/*
 * ExecSavedLatest is ExecSaved in a snapshot taken now rather than the
 * transaction's: whatever the isolation level, the statement sees every
 * transaction that committed before it started, and this transaction's own
 * changes, as a statement in READ COMMITTED does. It is for a check made
 * after taking the row locks that every writer of what is checked holds
 * while it writes, so that nothing the check depends on can be in flight
 * (docs/outbox.md, "Completing a run"). PostgreSQL's own foreign key checks
 * do the same under REPEATABLE READ (ri_triggers.c, GetLatestSnapshot).
 * Rows it changes need not be visible to the transaction's snapshot: no
 * cross-check is made.
 */
int
ExecSavedLatest(SavedStatement *stmt, Datum *values, const char *nulls, long count)
{
	return ExecSavedIn(stmt, values, nulls, false, count, GetLatestSnapshot());
}

/* GetResultDatum returns column col (1-based) of result row row. */
Datum
GetResultDatum(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/* ExecSavedExpect; see statements.h. */
void
ExecSavedExpect(SavedStatement *stmt, Datum *values, const char *nulls,
				bool read_only, long count, int expected, const char *failure)
{
	if (ExecSaved(stmt, values, nulls, read_only, count) != expected)
		elog(ERROR, "%s", failure);
}

/* ExecSavedOneRow; see statements.h. */
void
ExecSavedOneRow(SavedStatement *stmt, Datum *values, const char *nulls,
				bool read_only, long count, int expected, const char *failure)
{
	if (ExecSaved(stmt, values, nulls, read_only, count) != expected ||
		SPI_processed != 1)
		elog(ERROR, "%s", failure);
}

/* ExecSavedValue; see statements.h. */
Datum
ExecSavedValue(SavedStatement *stmt, Datum *values, const char *nulls,
			   bool read_only, int expected, const char *failure, bool *isnull)
{
	ExecSavedOneRow(stmt, values, nulls, read_only, 1, expected, failure);
	return GetResultDatum(0, 1, isnull);
}

/* ExecSavedFind; see statements.h. */
bool
ExecSavedFind(SavedStatement *stmt, Datum value, const char *failure)
{
	ExecSavedExpect(stmt, &value, NULL, false, 1, SPI_OK_SELECT, failure);
	return SPI_processed > 0;
}

/* ExecSavedByKey; see statements.h. */
bool
ExecSavedByKey(SavedStatement *stmt, Datum key, int expected, const char *failure)
{
	ExecSavedExpect(stmt, &key, NULL, false, 0, expected, failure);
	return SPI_processed > 0;
}

/* PutResultRows; see statements.h. */
void
PutResultRows(ReturnSetInfo *rsinfo, int ncols)
{
	Datum	   *row = palloc(sizeof(Datum) * ncols);
	bool	   *nulls = palloc(sizeof(bool) * ncols);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		for (int c = 0; c < ncols; c++)
			row[c] = GetResultDatum(i, c + 1, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
}

/* GetResultCString; see statements.h. */
char *
GetResultCString(int row, int col)
{
	bool		isnull;
	Datum		d = GetResultDatum(row, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* ResultColumnArray; see statements.h. */
Datum
ResultColumnArray(int col, Oid elemtype)
{
	int			n = (int) SPI_processed;
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int16		typlen;
	bool		typbyval;
	char		typalign;

	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		elems[i] = GetResultDatum(i, col, &isnull);
	}
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	/* construct_array copies (and detoasts) the values: the result may go */
	return PointerGetDatum(construct_array(elems, n, elemtype, typlen, typbyval, typalign));
}

/* SetTextParam sets parameter i to the text s, or to NULL when s is NULL. */
void
SetTextParam(Datum *values, char *nulls, int i, const char *s)
{
	values[i] = s ? CStringGetTextDatum(s) : (Datum) 0;
	nulls[i] = s ? ' ' : 'n';
}

/*
 * SetPointerParam sets parameter i to the by-reference datum p (text,
 * jsonb, uuid, interval ...), or to NULL when p is NULL.
 */
void
SetPointerParam(Datum *values, char *nulls, int i, const void *p)
{
	values[i] = PointerGetDatum(p);
	nulls[i] = p ? ' ' : 'n';
}

/* IdemgateRelid returns the OID of idemgate.<name>, or InvalidOid. */
Oid
IdemgateRelid(const char *name)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}
