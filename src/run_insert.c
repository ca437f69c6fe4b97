/*-------------------------------------------------------------------------
 *
 * src/run_insert.c
 *	  The new-key path of claim: a run row inserted straight into
 *	  idemgate.runs, without an SPI statement.
 *
 * Design note. A claim on a new key is the hot path (issue 12). The SPI
 * statement (INSERT ... ON CONFLICT DO UPDATE ... RETURNING) spends more on
 * plan revalidation and executor start-up than on the insert itself, so a
 * new key is inserted here the way the executor's ON CONFLICT does it:
 *
 *   1. ExecCheckIndexConstraints probes the primary key with a dirty
 *	    snapshot, waiting for an in-progress inserter of the same key;
 *   2. no row: take the speculative insertion lock, insert the heap tuple
 *	    as speculative, insert its index entries (the primary key with
 *	    UNIQUE_CHECK_PARTIAL), then confirm the tuple, or kill it when a
 *	    concurrent inserter got the key in between, and release the lock
 *	    (waiters then see a plain tuple or a dead one).
 *
 * Whenever the key exists (step 1 finds a row, or step 2 lost a race) this
 * returns false and the caller runs the SPI statement, which takes the run
 * over, or reports a duplicate or a different payload, exactly as before.
 * So the only thing done here is what the statement does for a key nobody
 * holds, with the same locks (RowExclusiveLock on the table and its
 * indexes), the same WAL records and the same values (now() is the
 * transaction start, like pg_catalog.now()).
 *
 * The fast path is taken only for the table it was written for: every
 * column known by name and type (or one with a constant default, or a
 * nullable one without default, left NULL), no insert trigger, rule, CHECK constraint, generated column or row
 * security, a primary key, and INSERT privilege for the current user (the
 * function's owner). Anything else goes to the SPI statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "run_insert.h"

/* The columns of idemgate.runs, as the claim statement fills them. */
typedef enum RunColumn
{
	COL_KEY, COL_WORKFLOW, COL_STATE, COL_HASH, COL_PAYLOAD, COL_OWNER,
	COL_EXPIRES, COL_STARTED, COL_VERSION, COL_FAILURES, COL_RESULT,
	COL_REPLACES, COL_CREATED, COL_UPDATED, COL_VALIDATIONS, NUM_RUN_COLUMNS
} RunColumn;

static const struct
{
	const char *name;
	Oid			type;
}			run_columns[NUM_RUN_COLUMNS] = {
	{"idempotency_key", TEXTOID}, {"workflow", TEXTOID}, {"state", TEXTOID},
	{"payload_hash", BYTEAOID}, {"payload", JSONBOID}, {"lease_owner", UUIDOID},
	{"lease_expires_at", TIMESTAMPTZOID}, {"lease_started_at", TIMESTAMPTZOID},
	{"version", INT8OID}, {"failures", INT4OID}, {"result", JSONBOID},
	{"replaces_key", TEXTOID}, {"created_at", TIMESTAMPTZOID},
	{"updated_at", TIMESTAMPTZOID}, {"validations", INT4OID}
};

/* RunsRelid returns the OID of idemgate.runs, or InvalidOid. */
static Oid
RunsRelid(void)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) ? get_relname_relid("runs", nsp) : InvalidOid;
}

/*
 * FillRunTuple puts the new run's values into values/nulls in the table's
 * column order, and tells whether the table is one the fast path was
 * written for (see the design note).
 */
static bool
FillRunTuple(Relation rel, const NewRun *run, Datum *values, bool *nulls)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Datum		col[NUM_RUN_COLUMNS];
	bool		colnull[NUM_RUN_COLUMNS];
	int			found = 0;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rules != NULL ||
		rel->rd_rel->relrowsecurity ||
		(rel->trigdesc != NULL &&
		 (rel->trigdesc->trig_insert_before_row || rel->trigdesc->trig_insert_after_row ||
		  rel->trigdesc->trig_insert_instead_row ||
		  rel->trigdesc->trig_insert_before_statement ||
		  rel->trigdesc->trig_insert_after_statement ||
		  rel->trigdesc->trig_insert_new_table)) ||
		(desc->constr != NULL &&
		 (desc->constr->num_check > 0 || desc->constr->has_generated_stored)))
		return false;

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

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int			c;

		values[i] = (Datum) 0;
		nulls[i] = true;
		if (att->attisdropped)
			continue;
		for (c = 0; c < NUM_RUN_COLUMNS; c++)
			if (strcmp(NameStr(att->attname), run_columns[c].name) == 0)
				break;
		if (c == NUM_RUN_COLUMNS)
		{
			/* A column added later: a constant default, or nullable. */
			Node	   *def = att->atthasdef ? build_column_default(rel, i + 1) : NULL;

			if (def != NULL && IsA(def, Const))
			{
				values[i] = ((Const *) def)->constvalue;
				nulls[i] = ((Const *) def)->constisnull;
			}
			else if (def != NULL || att->attnotnull)
				return false;
			continue;
		}
		if (att->atttypid != run_columns[c].type)
			return false;
		values[i] = col[c];
		nulls[i] = colnull[c];
		found++;
	}
	return found == NUM_RUN_COLUMNS;
}

/*
 * InsertNewRun inserts run as a new processing run (version 0) and returns
 * true, or returns false, having written nothing, when the key exists or
 * the fast path does not apply: the caller then runs the claim statement.
 */
bool
InsertNewRun(const NewRun *run)
{
	Oid			relid = RunsRelid();
	Relation	rel;
	Datum	   *values;
	bool	   *nulls;
	Oid			pkey;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	List	   *arbiter;
	ItemPointerData conflict_tid;
	bool		inserted = false;

	if (!OidIsValid(relid) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;

	/* The lock the statement takes; kept to the end of the transaction. */
	rel = table_open(relid, RowExclusiveLock);
	values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	pkey = RelationGetPrimaryKeyIndex(rel);
	if (!OidIsValid(pkey) || !FillRunTuple(rel, run, values, nulls))
	{
		table_close(rel, NoLock);
		return false;
	}

	estate = CreateExecutorState();
	estate->es_output_cid = GetCurrentCommandId(true);
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, true);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), table_slot_callbacks(rel));
	memcpy(slot->tts_values, values, sizeof(Datum) * slot->tts_tupleDescriptor->natts);
	memcpy(slot->tts_isnull, nulls, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	ExecStoreVirtualTuple(slot);
	arbiter = list_make1_oid(pkey);

	/* 1: is the key held, or being inserted (then wait for the outcome)? */
	if (ExecCheckIndexConstraints(rri, slot, estate, &conflict_tid, arbiter))
	{
		/* 2: insert speculatively; a concurrent inserter may still win. */
		TransactionId xid = GetCurrentTransactionId();
		uint32		token = SpeculativeInsertionLockAcquire(xid);
		bool		conflict = false;

		table_tuple_insert_speculative(rel, slot, estate->es_output_cid, 0, NULL, token);
		list_free(ExecInsertIndexTuples(rri, slot, estate, false, true, &conflict, arbiter));
		table_tuple_complete_speculative(rel, slot, token, !conflict);
		SpeculativeInsertionLockRelease(xid);
		inserted = !conflict;
	}

	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	/* Later statements of the transaction see the run (SPI does the same). */
	if (inserted)
		CommandCounterIncrement();
	return inserted;
}
