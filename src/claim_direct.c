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
 * A duplicate claim also writes its event row directly (RecordDuplicate):
 * the identity id from its sequence, at = now(), the details object built
 * in C; jsonb_build_object and the executor start-up of the SPI INSERT were
 * half of a duplicate claim.
 *
 * The direct paths are taken only for the tables they were written for:
 * every column known by name and type (or one with a constant default, or
 * a nullable one without default, left NULL), no insert trigger, rule,
 * CHECK constraint, generated column or row security, a primary key, and
 * the privileges the statement needs for the current user (the function's
 * owner). Anything else goes to the SPI statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "claim_direct.h"
#include "events.h"

/* A column the direct paths write, by name and type. */
typedef struct KnownColumn
{
	const char *name;
	Oid			type;
} KnownColumn;

/* The columns of idemgate.runs, as the claim statement fills them. */
typedef enum RunColumn
{
	COL_KEY, COL_WORKFLOW, COL_STATE, COL_HASH, COL_PAYLOAD, COL_OWNER,
	COL_EXPIRES, COL_STARTED, COL_VERSION, COL_FAILURES, COL_RESULT,
	COL_REPLACES, COL_CREATED, COL_UPDATED, COL_VALIDATIONS, NUM_RUN_COLUMNS
} RunColumn;

static const KnownColumn run_columns[NUM_RUN_COLUMNS] = {
	{"idempotency_key", TEXTOID}, {"workflow", TEXTOID}, {"state", TEXTOID},
	{"payload_hash", BYTEAOID}, {"payload", JSONBOID}, {"lease_owner", UUIDOID},
	{"lease_expires_at", TIMESTAMPTZOID}, {"lease_started_at", TIMESTAMPTZOID},
	{"version", INT8OID}, {"failures", INT4OID}, {"result", JSONBOID},
	{"replaces_key", TEXTOID}, {"created_at", TIMESTAMPTZOID},
	{"updated_at", TIMESTAMPTZOID}, {"validations", INT4OID}
};

/* The columns of idemgate.events, as the duplicate event statement fills them. */
typedef enum EventColumn
{
	EV_ID, EV_AT, EV_KEY, EV_EFFECT, EV_KIND, EV_ACTOR, EV_DETAILS, NUM_EVENT_COLUMNS
} EventColumn;

static const KnownColumn event_columns[NUM_EVENT_COLUMNS] = {
	{"id", INT8OID}, {"at", TIMESTAMPTZOID}, {"idempotency_key", TEXTOID},
	{"effect_id", UUIDOID}, {"kind", TEXTOID}, {"actor", TEXTOID}, {"details", JSONBOID}
};

/* The identity sequence of events.id, kept until events is invalidated. */
static Oid	events_relid = InvalidOid;
static Oid	events_id_seq = InvalidOid;
static bool events_callback_registered = false;

/* ForgetEventsSequence drops the cached sequence when events changes. */
static void
ForgetEventsSequence(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == events_relid)
	{
		events_relid = InvalidOid;
		events_id_seq = InvalidOid;
	}
}

/* OurRelid returns the OID of idemgate.name, or InvalidOid. */
static Oid
OurRelid(const char *name)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

/*
 * FillRow puts the known columns' values (col/colnull, in the order of
 * known) into values/nulls in the table's column order and the attribute
 * number of each known column into attnums, and tells whether the table is
 * one the direct paths were written for (see the design note). An identity
 * column must be known; the caller fills it.
 */
static bool
FillRow(Relation rel, const KnownColumn *known, int nknown,
		const Datum *col, const bool *colnull,
		Datum *values, bool *nulls, AttrNumber *attnums)
{
	TupleDesc	desc = RelationGetDescr(rel);
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

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int			c;

		values[i] = (Datum) 0;
		nulls[i] = true;
		if (att->attisdropped)
			continue;
		for (c = 0; c < nknown; c++)
			if (strcmp(NameStr(att->attname), known[c].name) == 0)
				break;
		if (c == nknown)
		{
			/* A column added later: a constant default, or nullable. */
			Node	   *def = att->atthasdef ? build_column_default(rel, i + 1) : NULL;

			if (def != NULL && IsA(def, Const))
			{
				values[i] = ((Const *) def)->constvalue;
				nulls[i] = ((Const *) def)->constisnull;
			}
			else if (def != NULL || att->attnotnull || att->attidentity)
				return false;
			continue;
		}
		if (att->atttypid != known[c].type)
			return false;
		values[i] = col[c];
		nulls[i] = colnull[c];
		attnums[c] = i + 1;
		found++;
	}
	return found == nknown;
}

/* StoreRow makes a slot of rel holding values/nulls. */
static TupleTableSlot *
StoreRow(Relation rel, const Datum *values, const bool *nulls)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
													table_slot_callbacks(rel));
	int			natts = RelationGetDescr(rel)->natts;

	memcpy(slot->tts_values, values, sizeof(Datum) * natts);
	memcpy(slot->tts_isnull, nulls, sizeof(bool) * natts);
	return ExecStoreVirtualTuple(slot);
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
	Oid			relid = OurRelid("runs");
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Datum		col[NUM_RUN_COLUMNS];
	bool		colnull[NUM_RUN_COLUMNS];
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

	/* The lock the statement takes; kept to the end of the transaction. */
	rel = table_open(relid, RowExclusiveLock);
	values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	pkey = RelationGetPrimaryKeyIndex(rel);
	if (!OidIsValid(pkey) ||
		!FillRow(rel, run_columns, NUM_RUN_COLUMNS, col, colnull, values, nulls, attnums))
	{
		table_close(rel, NoLock);
		return CLAIM_USE_STATEMENT;
	}

	estate = CreateExecutorState();
	estate->es_output_cid = GetCurrentCommandId(true);
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, true);
	slot = StoreRow(rel, values, nulls);
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

/*
 * RecordDuplicate writes the duplicate event of a claim of key (details:
 * workflow when there is one, state, version) as the statement
 * INSERT INTO idemgate.events (idempotency_key, kind, actor, details) would,
 * and returns true; or returns false, having written nothing, when the
 * events table is not the one it was written for (the caller then runs the
 * statement).
 */
bool
RecordDuplicate(text *key, const char *actor, Datum workflow, bool workflow_null,
				Datum state, int64 version)
{
	Oid			relid = OurRelid("events");
	Relation	rel;
	Datum		col[NUM_EVENT_COLUMNS];
	bool		colnull[NUM_EVENT_COLUMNS];
	AttrNumber	attnums[NUM_EVENT_COLUMNS];
	Datum	   *values;
	bool	   *nulls;
	EventDetails details;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;

	if (!OidIsValid(relid) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;

	/* jsonb_strip_nulls(jsonb_build_object('workflow', ..., 'state', ..., 'version', ...)) */
	DetailsInit(&details);
	if (!workflow_null)
		DetailsText(&details, "workflow", TextDatumGetCString(workflow));
	DetailsText(&details, "state", TextDatumGetCString(state));
	DetailsInt(&details, "version", version);

	memset(colnull, 0, sizeof(colnull));
	col[EV_ID] = (Datum) 0;		/* below, once the table is known to fit */
	col[EV_AT] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	col[EV_KEY] = PointerGetDatum(key);
	col[EV_EFFECT] = (Datum) 0;
	colnull[EV_EFFECT] = true;
	col[EV_KIND] = CStringGetTextDatum("duplicate");
	col[EV_ACTOR] = actor ? CStringGetTextDatum(actor) : (Datum) 0;
	colnull[EV_ACTOR] = actor == NULL;
	col[EV_DETAILS] = JsonbPGetDatum(DetailsFinish(&details));

	rel = table_open(relid, RowExclusiveLock);
	values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	if (!FillRow(rel, event_columns, NUM_EVENT_COLUMNS, col, colnull, values, nulls, attnums) ||
		!TupleDescAttr(RelationGetDescr(rel), attnums[EV_ID] - 1)->attidentity)
	{
		table_close(rel, NoLock);
		return false;
	}

	/* id: the identity's next value, as the executor takes it. */
	if (events_relid != relid)
	{
		if (!events_callback_registered)
		{
			CacheRegisterRelcacheCallback(ForgetEventsSequence, (Datum) 0);
			events_callback_registered = true;
		}
		events_id_seq = getIdentitySequence(relid, attnums[EV_ID], false);
		events_relid = relid;
	}
	values[attnums[EV_ID] - 1] = Int64GetDatum(nextval_internal(events_id_seq, false));
	nulls[attnums[EV_ID] - 1] = false;

	estate = CreateExecutorState();
	estate->es_output_cid = GetCurrentCommandId(true);
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = StoreRow(rel, values, nulls);
	table_tuple_insert(rel, slot, estate->es_output_cid, 0, NULL);
	list_free(ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL));

	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	CommandCounterIncrement();
	return true;
}
