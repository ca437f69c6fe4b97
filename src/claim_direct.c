/*-------------------------------------------------------------------------
 *
 * src/claim_direct.c
 *	  The hot paths of claim without an SPI statement: a new key is
 *	  inserted, and a key that exists is locked and read, straight through
 *	  the table access method.
 *
 * Design note. A claim on a new key, and a duplicate claim, are the hot
 * paths (issue 12). The SPI statement (INSERT ... ON CONFLICT DO UPDATE ...
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
 * the transaction snapshot).
 *
 * The direct paths are taken only for the table they were written for:
 * every column known by name and type (or one with a constant default, or
 * a nullable one without default, left NULL), no insert trigger, rule,
 * CHECK constraint, generated column or row security, a primary key, and
 * INSERT, UPDATE and SELECT privileges for the current user (the function's
 * owner). Anything else goes to the SPI statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/snapmgr.h"
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

#include "claim_direct.h"

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
 * column order and the attribute number of each known column into attnums,
 * and tells whether the table is one the direct paths were written for
 * (see the design note).
 */
static bool
FillRunTuple(Relation rel, const NewRun *run, Datum *values, bool *nulls,
			 AttrNumber *attnums)
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
		attnums[c] = i + 1;
		found++;
	}
	return found == NUM_RUN_COLUMNS;
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
	Oid			relid = RunsRelid();
	Relation	rel;
	Datum	   *values;
	bool	   *nulls;
	AttrNumber	attnums[NUM_RUN_COLUMNS];
	Oid			pkey;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	List	   *arbiter;
	ItemPointerData conflict_tid;
	ClaimPath	path = CLAIM_USE_STATEMENT;

	if (!OidIsValid(relid) ||
		pg_class_aclmask(relid, GetUserId(), needed, ACLMASK_ALL) != needed)
		return CLAIM_USE_STATEMENT;

	/* The lock the statement takes; kept to the end of the transaction. */
	rel = table_open(relid, RowExclusiveLock);
	values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	pkey = RelationGetPrimaryKeyIndex(rel);
	if (!OidIsValid(pkey) || !FillRunTuple(rel, run, values, nulls, attnums))
	{
		table_close(rel, NoLock);
		return CLAIM_USE_STATEMENT;
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
		path = conflict ? CLAIM_USE_STATEMENT : CLAIM_INSERTED;
	}
	else if (!IsolationUsesXactSnapshot())
		/* 3: the key is held. */
		path = ExistingRunClaim(rel, &conflict_tid, estate->es_output_cid, run,
								attnums, existing);

	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	/* Later statements of the transaction see the run (SPI does the same). */
	if (path == CLAIM_INSERTED)
		CommandCounterIncrement();
	return path;
}
