/*-------------------------------------------------------------------------
 *
 * src/ledger/claim_direct.c
 *	  The hot paths of claim without an SPI statement: a new key is
 *	  inserted, and a key that exists is locked and read, straight through
 *	  the table access method.
 *
 * Design note. A claim on a new key, and a duplicate claim, are the hot
 * paths (bench/README.md). The SPI statement (INSERT ... ON CONFLICT DO UPDATE ...
 * RETURNING, then a SELECT for a duplicate) spent more on plan
 * revalidation and executor start-up than on the work, so ClaimDirect does
 * what the executor's ON CONFLICT does, with the same locks (RowExclusiveLock
 * on the table and its indexes, FOR NO KEY UPDATE on an existing row), the
 * same WAL records and the same values (now() is the transaction start):
 *
 *   1. ExecCheckIndexConstraints probes the primary key with a dirty
 *	    snapshot, waiting for an in-progress inserter of the same key;
 *   2. no row: take the speculative insertion lock, insert the heap tuple
 *	    as speculative, insert its index entries (the primary key with
 *	    UNIQUE_CHECK_PARTIAL), then confirm the tuple, or kill it when a
 *	    concurrent inserter got the key in between, and release the lock
 *	    (waiters then see a plain tuple or a dead one): CLAIM_INSERTED;
 *   3. a row: lock its latest version as DO UPDATE does (the lock is kept
 *	    to the end of the transaction, also for a duplicate) and evaluate
 *	    the statement's WHERE in C. When it does not hold (a live lease, a
 *	    finished run, another payload) the run is returned: CLAIM_EXISTS.
 *
 * Everything else returns CLAIM_USE_STATEMENT, having written nothing, and
 * the caller runs the SPI statement, which decides as before: a takeover
 * (the WHERE holds: the statement re-locks the row, ours already, and
 * updates it), a lost race in step 2, a row updated or deleted before the
 * lock (TM_Updated/TM_Deleted: the statement retries), REPEATABLE READ and
 * SERIALIZABLE for an existing row (the statement checks the row against
 * the transaction snapshot), a read-only transaction or parallel mode (the
 * statement raises their errors).
 *
 * A duplicate claim also writes its event row directly (RecordDuplicate):
 * the identity id from its sequence, at = now(), the details object built
 * in C; jsonb_build_object and the executor start-up of the SPI INSERT were
 * half of a duplicate claim.
 *
 * The direct paths write what the statement would write only on the table
 * they were written for, so they run only on the shape the extension
 * creates (README.md, "Design choices worth knowing"); on any other the
 * caller runs the statement, which applies whatever the user added. The
 * shape, checked against the catalogs and kept per backend until a
 * relcache invalidation of the table (any ALTER, CREATE INDEX, trigger,
 * rule or policy sends one), is:
 *
 *   - every known column (run_columns, event_columns) with its type, no
 *     type modifier, the type's collation, NOT NULL or not, its default
 *     (none, 0, now(), the identity of events.id) and not generated;
 *   - any other column is filled as an INSERT that does not name it fills
 *     it: NULL or a constant (kept), or now(), and its type is no domain
 *     (a domain's default and constraints, which ALTER DOMAIN changes
 *     without a relcache invalidation, would apply); a column a later
 *     version adds with a constant default keeps the direct paths;
 *   - one unique index, the primary key on the first known column (a plain
 *     immediate btree), and no other constraint: ON CONFLICT uses every
 *     unique index on idempotency_key as arbiter, and a CHECK, foreign key,
 *     exclusion or deferrable constraint would be checked by the executor
 *     (NOT NULL constraints, which 18 keeps in pg_constraint, are the
 *     columns' attnotnull, checked above).
 *     Other indexes, the extension's or a user's, do not count: the direct
 *     paths fill them with ExecInsertIndexTuples, the executor's own call,
 *     with the statement's arguments (predicates and expressions included);
 *   - no trigger of any kind or level (an INSERT ... ON CONFLICT DO UPDATE
 *     fires the UPDATE statement triggers too), rule, policy or row
 *     security, no inheritance or partitioning, the heap access method;
 *   - the default replica identity (the primary key): with it the replica
 *     identity check an ON CONFLICT DO UPDATE makes for a table published
 *     for updates always passes, so publications do not matter; they do
 *     not change the WAL records of an insert, or a lock.
 *
 * The privileges the statement needs for the current user (the function's
 * owner) are checked on every call. A change of shape is said at DEBUG1
 * ("claims write idemgate.runs through the SQL statement: ...").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_policy.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ledger/claim_direct.h"
#include "citus/distributed.h"
#include "core/pg_compat.h"
#include "citus/statements.h"
#include "ledger/tombstones.h"

/* How the statement fills a known column it does not name. */
typedef enum KnownDefault
{
	DEF_NONE,					/* no default (the statement names the column) */
	DEF_ZERO,					/* DEFAULT 0 */
	DEF_NOW,					/* DEFAULT pg_catalog.now() */
	DEF_IDENTITY				/* GENERATED ALWAYS AS IDENTITY */
} KnownDefault;

/*
 * A column the direct paths write, as the extension creates it (its type
 * with no modifier and the type's collation, NOT NULL or not, its default).
 */
typedef struct KnownColumn
{
	const char *name;
	Oid			type;
	bool		notnull;
	KnownDefault def;
} KnownColumn;

/* The columns of idemgate.runs, as the claim statement fills them. */
typedef enum RunColumn
{
	COL_KEY, COL_WORKFLOW, COL_STATE, COL_HASH, COL_PAYLOAD, COL_OWNER,
	COL_EXPIRES, COL_STARTED, COL_VERSION, COL_FAILURES, COL_RESULT,
	COL_REPLACES, COL_CREATED, COL_UPDATED, COL_VALIDATIONS, COL_ORIGIN, NUM_RUN_COLUMNS
} RunColumn;

static const KnownColumn run_columns[NUM_RUN_COLUMNS] = {
	{"idempotency_key", TEXTOID, true, DEF_NONE},
	{"workflow", TEXTOID, false, DEF_NONE},
	{"state", TEXTOID, true, DEF_NONE},
	{"payload_hash", BYTEAOID, true, DEF_NONE},
	{"payload", JSONBOID, false, DEF_NONE},
	{"lease_owner", UUIDOID, false, DEF_NONE},
	{"lease_expires_at", TIMESTAMPTZOID, false, DEF_NONE},
	{"lease_started_at", TIMESTAMPTZOID, false, DEF_NONE},
	{"version", INT8OID, true, DEF_ZERO},
	{"failures", INT4OID, true, DEF_ZERO},
	{"result", JSONBOID, false, DEF_NONE},
	{"replaces_key", TEXTOID, false, DEF_NONE},
	{"created_at", TIMESTAMPTZOID, true, DEF_NOW},
	{"updated_at", TIMESTAMPTZOID, true, DEF_NOW},
	{"validations", INT4OID, true, DEF_ZERO},
	{"origin", TEXTOID, false, DEF_NONE}
};

/* The columns of idemgate.events, as the duplicate event statement fills them. */
typedef enum EventColumn
{
	EV_ID, EV_AT, EV_KEY, EV_EFFECT, EV_KIND, EV_ACTOR, EV_DETAILS, NUM_EVENT_COLUMNS
} EventColumn;

static const KnownColumn event_columns[NUM_EVENT_COLUMNS] = {
	{"id", INT8OID, true, DEF_IDENTITY},
	{"at", TIMESTAMPTZOID, true, DEF_NOW},
	{"idempotency_key", TEXTOID, false, DEF_NONE},
	{"effect_id", UUIDOID, false, DEF_NONE},
	{"kind", TEXTOID, true, DEF_NONE},
	{"actor", TEXTOID, false, DEF_NONE},
	{"details", JSONBOID, false, DEF_NONE}
};

/* The primary key of both tables is their first known column. */
StaticAssertDecl(COL_KEY == 0 && EV_ID == 0, "primary key is known column 0");

/* Columns a table may have for the direct paths (runs has 17). */
#define MAX_DIRECT_ATTS 64

/* A column the direct paths do not know: a constant (maybe NULL), or now(). */
#define ATT_CONST (-1)
#define ATT_NOW (-2)

/*
 * What the direct paths know about one of our tables, from its relcache
 * entry and catalogs: kept until a relcache invalidation of the table (any
 * ALTER, a new trigger, rule, policy, index or constraint, a drop) makes
 * the next call look again.
 */
typedef struct DirectTable
{
	const char *name;
	const KnownColumn *known;
	int			nknown;
	Oid			relid;			/* InvalidOid: look it up again */
	bool		checked;		/* fits and what follows are current */
	bool		fits;			/* the table has the shape of the design note */
	int			natts;
	int16		map[MAX_DIRECT_ATTS];	/* known column of each attribute, or ATT_* */
	Datum		constant[MAX_DIRECT_ATTS];	/* ATT_CONST: the value */
	bool		constant_null[MAX_DIRECT_ATTS];
	MemoryContext cxt;			/* holds the constants */
	AttrNumber	attnums[NUM_RUN_COLUMNS];	/* attribute of each known column */
	Oid			pkey;			/* the primary key index */
	Oid			id_seq;			/* the identity sequence of events.id */
} DirectTable;

static DirectTable runs_table = {"runs", run_columns, NUM_RUN_COLUMNS};
static DirectTable events_table = {"events", event_columns, NUM_EVENT_COLUMNS};
static bool callback_registered = false;

StaticAssertDecl((int) NUM_EVENT_COLUMNS <= (int) NUM_RUN_COLUMNS, "attnums too small for events");

/* ForgetTables drops what is known about a table when it changes. */
static void
ForgetTables(Datum arg, Oid relid)
{
	DirectTable *tables[] = {&runs_table, &events_table};

	for (int i = 0; i < lengthof(tables); i++)
		if (relid == InvalidOid || relid == tables[i]->relid)
		{
			tables[i]->relid = InvalidOid;
			tables[i]->checked = false;
		}
}

/*
 * InsertedDefault returns what an INSERT that does not name attribute
 * attnum of rel writes into it, simplified as the planner simplifies it
 * (int8(0) becomes the constant 0), or NULL when it writes NULL.
 */
static Node *
InsertedDefault(Relation rel, AttrNumber attnum)
{
	Node	   *def = build_column_default(rel, attnum);

	return def ? (Node *) expression_planner((Expr *) def) : NULL;
}

/* IsNow tells whether node is a call of pg_catalog.now(). */
static bool
IsNow(Node *node)
{
	return node != NULL && IsA(node, FuncExpr) &&
		((FuncExpr *) node)->funcid == F_NOW && ((FuncExpr *) node)->args == NIL;
}

/* IsZero tells whether node is the constant 0 of type (int4 or int8). */
static bool
IsZero(Node *node, Oid type)
{
	Const	   *c = (Const *) node;

	return node != NULL && IsA(node, Const) && c->consttype == type && !c->constisnull &&
		(type == INT8OID ? DatumGetInt64(c->constvalue) == 0 : DatumGetInt32(c->constvalue) == 0);
}

/*
 * KnownColumnDiffers returns why attribute att of rel is not known column
 * k as the extension creates it, or NULL when it is.
 */
static char *
KnownColumnDiffers(Relation rel, Form_pg_attribute att, const KnownColumn *k)
{
	const char *name = k->name;
	Node	   *def;

	if (att->atttypid != k->type || att->atttypmod != -1)
		return psprintf("column \"%s\" is not of type %s", name, format_type_be(k->type));
	if (att->attcollation != get_typcollation(k->type))
		return psprintf("column \"%s\" has another collation", name);
	if (att->attnotnull != k->notnull)
		return psprintf(k->notnull ? "column \"%s\" is nullable" : "column \"%s\" is NOT NULL", name);
	if (att->attgenerated != '\0')
		return psprintf("column \"%s\" is generated", name);
	if (k->def == DEF_IDENTITY)
		return att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS ? NULL :
			psprintf("column \"%s\" is not GENERATED ALWAYS AS IDENTITY", name);
	if (att->attidentity != '\0')
		return psprintf("column \"%s\" is an identity column", name);
	/* No default: looked for, not planned (it may be one that never runs). */
	if (k->def == DEF_NONE)
		return build_column_default(rel, att->attnum) == NULL ? NULL :
			psprintf("column \"%s\" has a default", name);
	def = InsertedDefault(rel, att->attnum);
	if (k->def == DEF_ZERO ? !IsZero(def, k->type) : !IsNow(def))
		return psprintf("column \"%s\" has another default", name);
	return NULL;
}

/*
 * OtherColumnDiffers returns why attribute att of rel, a column the
 * direct paths do not know, is not one they can fill as the statement
 * does: its value must be NULL, a constant (kept in t) or now(). Or NULL.
 */
static char *
OtherColumnDiffers(DirectTable *t, Relation rel, Form_pg_attribute att)
{
	const char *name = NameStr(att->attname);
	int			i = att->attnum - 1;
	Node	   *def;

	if (att->attgenerated != '\0')
		return psprintf("column \"%s\" is generated", name);
	if (att->attidentity != '\0')
		return psprintf("column \"%s\" is an identity column", name);
	/* A domain's default and constraints are not the column's. */
	if (get_typtype(att->atttypid) == TYPTYPE_DOMAIN)
		return psprintf("column \"%s\" is of a domain type", name);
	def = InsertedDefault(rel, att->attnum);
	if (IsNow(def) && att->atttypid == TIMESTAMPTZOID)
	{
		t->map[i] = ATT_NOW;
		return NULL;
	}
	if (def != NULL && (!IsA(def, Const) || ((Const *) def)->consttype != att->atttypid))
		return psprintf("column \"%s\" has a default that is not a constant", name);
	t->map[i] = ATT_CONST;
	t->constant_null[i] = def == NULL || ((Const *) def)->constisnull;
	if (t->constant_null[i] && att->attnotnull)
		return psprintf("column \"%s\" is NOT NULL without a default", name);
	if (!t->constant_null[i])
		t->constant[i] = datumCopy(((Const *) def)->constvalue, att->attbyval, att->attlen);
	return NULL;
}

/*
 * IsKeyIndex tells whether index (its pg_index tuple) is the primary key
 * the extension creates: a plain immediate btree on attribute attnum,
 * of type, with the type's default operator class and collation.
 */
static bool
IsKeyIndex(HeapTuple tuple, AttrNumber attnum, Oid type)
{
	Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);
	HeapTuple	classtup;
	Oid			am;
	bool		isnull;
	oidvector  *opclass;
	oidvector  *collation;
	int2vector *option;

	if (!index->indisprimary || !index->indisunique || index->indisexclusion ||
		!index->indimmediate || !index->indisvalid || !index->indisready ||
		!index->indislive || index->indnullsnotdistinct ||
		index->indnatts != 1 || index->indnkeyatts != 1 || index->indkey.values[0] != attnum ||
		!heap_attisnull(tuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(tuple, Anum_pg_index_indpred, NULL))
		return false;
	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(index->indexrelid));
	if (!HeapTupleIsValid(classtup))
		return false;
	am = ((Form_pg_class) GETSTRUCT(classtup))->relam;
	ReleaseSysCache(classtup);
	opclass = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indclass, &isnull));
	collation = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indcollation, &isnull));
	option = (int2vector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indoption, &isnull));
	return am == BTREE_AM_OID && opclass->values[0] == GetDefaultOpClass(type, BTREE_AM_OID) &&
		collation->values[0] == get_typcollation(type) && option->values[0] == 0;
}

/*
 * KeysDiffer returns why the unique indexes and the constraints of rel
 * are not the primary key alone, on the first known column, or NULL (and
 * the primary key index in t->pkey).
 */
static char *
KeysDiffer(DirectTable *t, Relation rel)
{
	ListCell   *lc;
	Relation	catalog;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;
	char	   *differs = NULL;

	t->pkey = InvalidOid;
	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexoid = lfirst_oid(lc);
		bool		ours;

		tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", indexoid);
		/* Other indexes get their entries from ExecInsertIndexTuples, as in the statement. */
		if (!((Form_pg_index) GETSTRUCT(tuple))->indisunique &&
			!((Form_pg_index) GETSTRUCT(tuple))->indisexclusion)
		{
			ReleaseSysCache(tuple);
			continue;
		}
		ours = !OidIsValid(t->pkey) && IsKeyIndex(tuple, t->attnums[0], t->known[0].type);
		ReleaseSysCache(tuple);
		if (!ours)
			return psprintf("index \"%s\" is unique", get_rel_name(indexoid));
		t->pkey = indexoid;
	}
	if (!OidIsValid(t->pkey))
		return pstrdup("it has no primary key");

	catalog = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationGetRelid(rel)));
	scan = systable_beginscan(catalog, ConstraintRelidTypidNameIndexId, true, NULL, 1, &key);
	while (differs == NULL && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tuple);

		/* PostgreSQL 18 keeps NOT NULL as constraints too: attnotnull says them all. */
		if (IsNotNullConstraint(con))
			continue;
		if (con->contype != CONSTRAINT_PRIMARY || con->conindid != t->pkey)
			differs = psprintf("it has constraint \"%s\"", NameStr(con->conname));
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	return differs;
}

/* HasPolicy tells whether a row security policy is defined on relid. */
static bool
HasPolicy(Oid relid)
{
	Relation	catalog = table_open(PolicyRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, Anum_pg_policy_polrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(catalog, PolicyPolrelidPolnameIndexId, true, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	return found;
}

/*
 * TableDiffers returns why rel does not have the shape the direct paths
 * were written for (see the design note), or NULL; it maps the columns
 * into t on the way.
 */
static char *
TableDiffers(DirectTable *t, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Form_pg_class form = rel->rd_rel;
	int			found = 0;

	if (desc->natts > MAX_DIRECT_ATTS)
		return pstrdup("it has too many columns");
	if (form->relkind != RELKIND_RELATION || form->relam != HEAP_TABLE_AM_OID)
		return pstrdup("it is not a heap table");
	if (form->relispartition || form->relhassubclass || has_superclass(RelationGetRelid(rel)))
		return pstrdup("it is part of an inheritance tree");
	/* With it, an ON CONFLICT DO UPDATE never fails for a publication. */
	if (form->relreplident != REPLICA_IDENTITY_DEFAULT)
		return pstrdup("its replica identity is not the default");
	if (rel->trigdesc != NULL)
		return psprintf("it has trigger \"%s\"", rel->trigdesc->triggers[0].tgname);
	if (rel->rd_rules != NULL)
		return pstrdup("it has a rule");
	if (form->relrowsecurity || form->relforcerowsecurity || HasPolicy(RelationGetRelid(rel)))
		return pstrdup("it has row security");

	MemoryContextReset(t->cxt);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		char	   *differs;
		int			c;

		t->map[i] = ATT_CONST;
		t->constant_null[i] = true;
		if (att->attisdropped)
			continue;
		for (c = 0; c < t->nknown; c++)
			if (strcmp(NameStr(att->attname), t->known[c].name) == 0)
				break;
		differs = c < t->nknown ? KnownColumnDiffers(rel, att, &t->known[c]) :
			OtherColumnDiffers(t, rel, att);
		if (differs != NULL)
			return differs;
		if (c < t->nknown)
		{
			t->map[i] = c;
			t->attnums[c] = i + 1;
			found++;
		}
	}
	if (found != t->nknown)
		return pstrdup("a column is missing");
	if (t->known[0].def == DEF_IDENTITY)
		t->id_seq = IdentitySequenceOf(rel, t->attnums[0]);
	return KeysDiffer(t, rel);
}

/*
 * CheckDirectTable tells (in t->fits) whether rel has the shape the direct
 * paths were written for, and says so at DEBUG1 with the reason.
 */
static void
CheckDirectTable(DirectTable *t, Relation rel)
{
	char	   *differs;

	if (t->cxt == NULL)
		t->cxt = AllocSetContextCreate(CacheMemoryContext, "idemgate claim direct path",
									   ALLOCSET_SMALL_SIZES);
	/* Until the look is done, and after an error in it: the statement. */
	t->checked = true;
	t->fits = false;
	t->natts = RelationGetDescr(rel)->natts;
	t->id_seq = InvalidOid;
	differs = TableDiffers(t, rel);
	t->fits = differs == NULL;
	if (t->fits)
		ereport(DEBUG1,
				(errmsg_internal("claims write idemgate.%s directly", t->name)));
	else
		ereport(DEBUG1,
				(errmsg_internal("claims write idemgate.%s through the SQL statement: %s",
								 t->name, differs)));
}

/*
 * OpenDirectTable opens idemgate.<t->name> with the lock an INSERT takes
 * (kept to the end of the transaction) when it fits the direct paths, or
 * returns NULL.
 */
static Relation
OpenDirectTable(DirectTable *t)
{
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(ForgetTables, (Datum) 0);
		callback_registered = true;
	}
	for (int attempt = 0; attempt < 3; attempt++)
	{
		Oid			relid;
		Relation	rel;

		if (!OidIsValid(t->relid))
		{
			t->checked = false;
			t->relid = IdemgateRelid(t->name);
		}
		relid = t->relid;
		if (!OidIsValid(relid))
			return NULL;
		rel = try_table_open(relid, RowExclusiveLock);
		/* Invalidations taken in with the lock may have reset t. */
		if (rel != NULL && t->relid == relid)
		{
			if (!t->checked || t->natts != RelationGetDescr(rel)->natts)
				CheckDirectTable(t, rel);
			/* Unless an invalidation came in while looking. */
			if (t->relid == relid && t->checked)
			{
				if (t->fits)
					return rel;
				table_close(rel, NoLock);
				return NULL;
			}
		}
		if (rel != NULL)
			table_close(rel, NoLock);
		t->relid = InvalidOid;
	}
	return NULL;
}

/*
 * FillRow puts the known columns' values (col/colnull, in the order of
 * t->known) and the other columns' constants into values/nulls in the
 * table's column order.
 */
static void
FillRow(DirectTable *t, const Datum *col, const bool *colnull, Datum *values, bool *nulls)
{
	for (int i = 0; i < t->natts; i++)
	{
		int			c = t->map[i];

		if (c >= 0)
		{
			values[i] = col[c];
			nulls[i] = colnull[c];
		}
		else if (c == ATT_NOW)
		{
			values[i] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			nulls[i] = false;
		}
		else
		{
			values[i] = t->constant[i];
			nulls[i] = t->constant_null[i];
		}
	}
}

/* What inserting one row into rel by hand needs, as the executor has it. */
typedef struct DirectInsert
{
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;		/* the row */
} DirectInsert;

/*
 * BeginDirectInsert sets up an executor state for rel with its indexes
 * open (speculative: for the arbiter checks of ON CONFLICT) and a slot
 * holding values/nulls.
 */
static void
BeginDirectInsert(DirectInsert *ins, Relation rel, const Datum *values, const bool *nulls,
				  bool speculative)
{
	int			natts = RelationGetDescr(rel)->natts;

	ins->estate = CreateExecutorState();
	ins->estate->es_output_cid = GetCurrentCommandId(true);
	ins->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(ins->rri, rel, 1, NULL, 0);
	ExecOpenIndices(ins->rri, speculative);
	ins->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), table_slot_callbacks(rel));
	memcpy(ins->slot->tts_values, values, sizeof(Datum) * natts);
	memcpy(ins->slot->tts_isnull, nulls, sizeof(bool) * natts);
	ExecStoreVirtualTuple(ins->slot);
}

/* EndDirectInsert releases what BeginDirectInsert set up. */
static void
EndDirectInsert(DirectInsert *ins)
{
	ExecDropSingleTupleTableSlot(ins->slot);
	ExecCloseIndices(ins->rri);
	FreeExecutorState(ins->estate);
}

/* CopyAttr returns a detoasted copy of attribute attnum of slot, or 0 when NULL. */
static Datum
CopyAttr(TupleTableSlot *slot, AttrNumber attnum, bool *isnull)
{
	Datum		d = slot_getattr(slot, attnum, isnull);

	return *isnull ? (Datum) 0 : PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
}

/*
 * ExistingRunClaim locks the row at tid as ON CONFLICT DO UPDATE does and
 * evaluates the statement's WHERE: CLAIM_EXISTS with the run in *existing
 * when it does not hold, CLAIM_USE_STATEMENT when it does (a takeover) or
 * the row changed before it could be locked.
 */
static ClaimPath
ExistingRunClaim(Relation rel, ItemPointer tid, CommandId cid, const NewRun *run,
				 const AttrNumber *attnums, ExistingRun *existing)
{
	TupleTableSlot *row = table_slot_create(rel, NULL);
	TM_FailureData tmfd;
	ClaimPath	path = CLAIM_USE_STATEMENT;
	bool		isnull;
	bytea	   *hash;
	char	   *state;
	Datum		expires;
	bool		expires_null;

	if (table_tuple_lock(rel, tid, GetActiveSnapshot(), row, cid,
						 LockTupleNoKeyExclusive, LockWaitBlock, 0, &tmfd) == TM_Ok)
	{
		hash = DatumGetByteaPP(slot_getattr(row, attnums[COL_HASH], &isnull));
		existing->same_payload = !isnull &&
			VARSIZE_ANY_EXHDR(hash) == VARSIZE_ANY_EXHDR(run->payload_hash) &&
			memcmp(VARDATA_ANY(hash), VARDATA_ANY(run->payload_hash),
				   VARSIZE_ANY_EXHDR(hash)) == 0;
		state = TextDatumGetCString(slot_getattr(row, attnums[COL_STATE], &isnull));
		expires = slot_getattr(row, attnums[COL_EXPIRES], &expires_null);
		/* WHERE r.payload_hash = excluded.payload_hash AND (r.state = ...) */
		if (existing->same_payload &&
			(strcmp(state, "failed_retryable") == 0 ||
			 (strcmp(state, "processing") == 0 && !expires_null &&
			  DatumGetTimestampTz(expires) < GetCurrentTransactionStartTimestamp())))
			path = CLAIM_USE_STATEMENT;		/* a takeover */
		else
		{
			path = CLAIM_EXISTS;
			existing->state = CStringGetTextDatum(state);
			existing->version = DatumGetInt64(slot_getattr(row, attnums[COL_VERSION], &isnull));
			existing->result = CopyAttr(row, attnums[COL_RESULT], &existing->result_null);
			existing->workflow = CopyAttr(row, attnums[COL_WORKFLOW], &existing->workflow_null);
		}
	}
	ExecDropSingleTupleTableSlot(row);
	return path;
}

/*
 * ClaimDirect claims run without an SPI statement where it can (see the
 * design note): CLAIM_INSERTED when it inserted the run as new, CLAIM_EXISTS
 * with the locked run in *existing when the key is held and cannot be taken
 * over, CLAIM_USE_STATEMENT, having written nothing, otherwise.
 */
ClaimPath
ClaimDirect(const NewRun *run, ExistingRun *existing)
{
	const AclMode needed = ACL_INSERT | ACL_UPDATE | ACL_SELECT;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Datum		col[NUM_RUN_COLUMNS];
	bool		colnull[NUM_RUN_COLUMNS];
	Relation	rel;
	Datum	   *values;
	bool	   *nulls;
	DirectInsert ins;
	List	   *arbiter;
	ItemPointerData conflict_tid;
	ClaimPath	path = CLAIM_USE_STATEMENT;
	bool		no_conflict;

	/* The statement raises the errors of these (a read-only transaction). */
	if (XactReadOnly || IsInParallelMode())
		return CLAIM_USE_STATEMENT;

	/* On Citus the rows live in the shards: only the statement finds them. */
	if (IdemgateIsDistributed())
		return CLAIM_USE_STATEMENT;

	memset(colnull, 0, sizeof(colnull));
	col[COL_KEY] = PointerGetDatum(run->key);
	col[COL_WORKFLOW] = PointerGetDatum(run->workflow);
	colnull[COL_WORKFLOW] = run->workflow == NULL;
	col[COL_STATE] = CStringGetTextDatum("processing");
	col[COL_HASH] = PointerGetDatum(run->payload_hash);
	col[COL_PAYLOAD] = JsonbPGetDatum(run->payload);
	col[COL_OWNER] = UUIDPGetDatum(run->owner);
	col[COL_EXPIRES] = DirectFunctionCall2(timestamptz_pl_interval,
										   TimestampTzGetDatum(now),
										   IntervalPGetDatum(run->lease));
	col[COL_STARTED] = TimestampTzGetDatum(now);
	col[COL_VERSION] = Int64GetDatum(0);
	col[COL_FAILURES] = Int32GetDatum(0);
	col[COL_RESULT] = (Datum) 0;
	colnull[COL_RESULT] = true;
	col[COL_REPLACES] = PointerGetDatum(run->replaces_key);
	colnull[COL_REPLACES] = run->replaces_key == NULL;
	col[COL_CREATED] = TimestampTzGetDatum(now);
	col[COL_UPDATED] = TimestampTzGetDatum(now);
	col[COL_VALIDATIONS] = Int32GetDatum(0);
	col[COL_ORIGIN] = PointerGetDatum(run->origin);
	colnull[COL_ORIGIN] = run->origin == NULL;

	/* The lock the statement takes; kept to the end of the transaction. */
	rel = OpenDirectTable(&runs_table);
	if (rel == NULL)
		return CLAIM_USE_STATEMENT;
	values = palloc(sizeof(Datum) * runs_table.natts);
	nulls = palloc(sizeof(bool) * runs_table.natts);
	FillRow(&runs_table, col, colnull, values, nulls);
	if (pg_class_aclmask(RelationGetRelid(rel), GetUserId(), needed, ACLMASK_ALL) != needed)
	{
		table_close(rel, NoLock);
		return CLAIM_USE_STATEMENT;
	}

	BeginDirectInsert(&ins, rel, values, nulls, true);
	/* The statement's arbiter: the only unique index (see the design note). */
	arbiter = list_make1_oid(runs_table.pkey);

	/* 1: is the key held, or being inserted (then wait for the outcome)? */
	no_conflict = CheckIndexConstraints(ins.rri, ins.slot, ins.estate, &conflict_tid, arbiter);
	if (no_conflict && FindTombstone(run->key, &existing->tombstone))
		path = CLAIM_TOMBSTONED;	/* purged: src/ledger/tombstones.c */
	else if (no_conflict)
	{
		/* 2: insert speculatively; a concurrent inserter may still win. */
		TransactionId xid = GetCurrentTransactionId();
		uint32		token = SpeculativeInsertionLockAcquire(xid);
		bool		conflict = false;

		table_tuple_insert_speculative(rel, ins.slot, ins.estate->es_output_cid, 0, NULL, token);
		list_free(InsertIndexTuples(ins.rri, ins.slot, ins.estate, false, true, &conflict,
										arbiter));
		table_tuple_complete_speculative(rel, ins.slot, token, !conflict);
		SpeculativeInsertionLockRelease(xid);
		path = conflict ? CLAIM_USE_STATEMENT : CLAIM_INSERTED;
	}
	else if (!IsolationUsesXactSnapshot())
		/* 3: the key is held. */
		path = ExistingRunClaim(rel, &conflict_tid, ins.estate->es_output_cid, run,
								runs_table.attnums, existing);

	EndDirectInsert(&ins);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	/* Later statements of the transaction see the run (SPI does the same). */
	if (path == CLAIM_INSERTED)
		CommandCounterIncrement();
	return path;
}

/* PushMember adds "key": value to the object being built in *ps. */
static void
PushMember(JsonbParseState **ps, const char *key, JsonbValue *value)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	pushJsonbValue(ps, WJB_KEY, &k);
	pushJsonbValue(ps, WJB_VALUE, value);
}

/*
 * DuplicateDetails builds jsonb_strip_nulls(jsonb_build_object('workflow',
 * workflow, 'state', state, 'version', version, 'origin', origin)).
 */
static Jsonb *
DuplicateDetails(Datum workflow, bool workflow_null, Datum state, int64 version,
				 text *origin)
{
	JsonbParseState *ps = NULL;
	JsonbValue	v;
	text	   *t;

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	if (!workflow_null)
	{
		t = DatumGetTextPP(workflow);
		v.type = jbvString;
		v.val.string.val = VARDATA_ANY(t);
		v.val.string.len = VARSIZE_ANY_EXHDR(t);
		PushMember(&ps, "workflow", &v);
	}
	t = DatumGetTextPP(state);
	v.type = jbvString;
	v.val.string.val = VARDATA_ANY(t);
	v.val.string.len = VARSIZE_ANY_EXHDR(t);
	PushMember(&ps, "state", &v);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(version);
	PushMember(&ps, "version", &v);
	if (origin != NULL)
	{
		v.type = jbvString;
		v.val.string.val = VARDATA_ANY(origin);
		v.val.string.len = VARSIZE_ANY_EXHDR(origin);
		PushMember(&ps, "origin", &v);
	}
	return JsonbValueToJsonb(pushJsonbValue(&ps, WJB_END_OBJECT, NULL));
}

/*
 * RecordDuplicate writes the duplicate event of a claim of key as the
 * statement INSERT INTO idemgate.events (idempotency_key, kind, actor,
 * details) would, and returns true; or returns false, having written
 * nothing, when the events table is not the one it was written for (the
 * caller then runs the statement).
 */
bool
RecordDuplicate(text *key, const char *actor, Datum workflow, bool workflow_null,
				Datum state, int64 version, text *origin)
{
	Relation	rel;
	Datum		col[NUM_EVENT_COLUMNS];
	bool		colnull[NUM_EVENT_COLUMNS];
	Datum	   *values;
	bool	   *nulls;
	DirectInsert ins;

	if (XactReadOnly || IsInParallelMode())
		return false;
	rel = OpenDirectTable(&events_table);
	if (rel == NULL)
		return false;
	if (pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_INSERT) != ACLCHECK_OK)
	{
		table_close(rel, NoLock);
		return false;
	}

	memset(colnull, 0, sizeof(colnull));
	/* id: the identity's next value, taken as the executor takes it. */
	col[EV_ID] = Int64GetDatum(nextval_internal(events_table.id_seq, false));
	col[EV_AT] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	col[EV_KEY] = PointerGetDatum(key);
	col[EV_EFFECT] = (Datum) 0;
	colnull[EV_EFFECT] = true;
	col[EV_KIND] = CStringGetTextDatum("duplicate");
	col[EV_ACTOR] = actor ? CStringGetTextDatum(actor) : (Datum) 0;
	colnull[EV_ACTOR] = actor == NULL;
	col[EV_DETAILS] = JsonbPGetDatum(DuplicateDetails(workflow, workflow_null, state, version,
															 origin));
	values = palloc(sizeof(Datum) * events_table.natts);
	nulls = palloc(sizeof(bool) * events_table.natts);
	FillRow(&events_table, col, colnull, values, nulls);

	BeginDirectInsert(&ins, rel, values, nulls, false);
	table_tuple_insert(rel, ins.slot, ins.estate->es_output_cid, 0, NULL);
	list_free(InsertIndexTuples(ins.rri, ins.slot, ins.estate, false, false, NULL, NIL));
	EndDirectInsert(&ins);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	CommandCounterIncrement();
	return true;
}
