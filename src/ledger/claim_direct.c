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
 * They run only on the table shape the extension creates, checked in
 * src/ledger/direct_tables.c; on any other the caller runs the statement.
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
#include "ledger/claim_direct.h"
#include "citus/distributed.h"
#include "core/pg_compat.h"
#include "citus/statements.h"
#include "ledger/tombstones.h"
#include "ledger/direct_tables.h"

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
	rel = OpenDirectTable(&DirectRunsTable);
	if (rel == NULL)
		return CLAIM_USE_STATEMENT;
	values = palloc(sizeof(Datum) * DirectRunsTable.natts);
	nulls = palloc(sizeof(bool) * DirectRunsTable.natts);
	FillDirectRow(&DirectRunsTable, col, colnull, values, nulls);
	if (pg_class_aclmask(RelationGetRelid(rel), GetUserId(), needed, ACLMASK_ALL) != needed)
	{
		table_close(rel, NoLock);
		return CLAIM_USE_STATEMENT;
	}

	BeginDirectInsert(&ins, rel, values, nulls, true);
	/* The statement's arbiter: the only unique index (see the design note). */
	arbiter = list_make1_oid(DirectRunsTable.pkey);

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
								DirectRunsTable.attnums, existing);

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
	rel = OpenDirectTable(&DirectEventsTable);
	if (rel == NULL)
		return false;
	if (pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_INSERT) != ACLCHECK_OK)
	{
		table_close(rel, NoLock);
		return false;
	}

	memset(colnull, 0, sizeof(colnull));
	/* id: the identity's next value, taken as the executor takes it. */
	col[EV_ID] = Int64GetDatum(nextval_internal(DirectEventsTable.id_seq, false));
	col[EV_AT] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	col[EV_KEY] = PointerGetDatum(key);
	col[EV_EFFECT] = (Datum) 0;
	colnull[EV_EFFECT] = true;
	col[EV_KIND] = CStringGetTextDatum("duplicate");
	col[EV_ACTOR] = actor ? CStringGetTextDatum(actor) : (Datum) 0;
	colnull[EV_ACTOR] = actor == NULL;
	col[EV_DETAILS] = JsonbPGetDatum(DuplicateDetails(workflow, workflow_null, state, version,
															 origin));
	values = palloc(sizeof(Datum) * DirectEventsTable.natts);
	nulls = palloc(sizeof(bool) * DirectEventsTable.natts);
	FillDirectRow(&DirectEventsTable, col, colnull, values, nulls);

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
