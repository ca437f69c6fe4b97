/*-------------------------------------------------------------------------
 *
 * src/ledger/direct_tables.c
 *	  Whether idemgate.runs and idemgate.events have the shape the claim's
 *	  direct paths were written for, kept per backend, and the rows those
 *	  paths write in each table's column order.
 *
 * Design note. The direct paths of claim (src/ledger/claim_direct.c) write
 * what the statement would write only on the table they were written for, so
 * they run only on the shape the extension creates (README.md, "Design choices
 * worth knowing"); on any other the caller runs the statement, which applies
 * whatever the user added. The shape, checked against the catalogs and kept
 * per backend until a relcache invalidation of the table (any ALTER, CREATE
 * INDEX, trigger, rule or policy sends one), is:
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
 * A change of shape is said at DEBUG1 ("claims write idemgate.runs through
 * the SQL statement: ...").
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

#include "miscadmin.h"
#include "citus/distributed.h"
#include "core/pg_compat.h"
#include "citus/statements.h"
#include "ledger/direct_tables.h"

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

/* A column the direct paths do not know: a constant (maybe NULL), or now(). */
#define ATT_CONST (-1)
#define ATT_NOW (-2)

DirectTable DirectRunsTable = {"runs", run_columns, NUM_RUN_COLUMNS};
DirectTable DirectEventsTable = {"events", event_columns, NUM_EVENT_COLUMNS};
static bool callback_registered = false;

StaticAssertDecl((int) NUM_EVENT_COLUMNS <= (int) NUM_RUN_COLUMNS, "attnums too small for events");

/* ForgetTables drops what is known about a table when it changes. */
static void
ForgetTables(Datum arg, Oid relid)
{
	DirectTable *tables[] = {&DirectRunsTable, &DirectEventsTable};

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
		return psprintf(k->notnull ? "column \"%s\" is nullable" : "column \"%s\" is NOT NULL",
						name);
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
	opclass = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple,
															Anum_pg_index_indclass, &isnull));
	collation = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple,
															  Anum_pg_index_indcollation, &isnull));
	option = (int2vector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple,
															Anum_pg_index_indoption, &isnull));
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
Relation
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
 * FillDirectRow puts the known columns' values (col/colnull, in the order of
 * t->known) and the other columns' constants into values/nulls in the
 * table's column order.
 */
void
FillDirectRow(DirectTable *t, const Datum *col, const bool *colnull, Datum *values, bool *nulls)
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
