/*-------------------------------------------------------------------------
 *
 * src/policy/killswitch.c
 *	  The kill switch ("interruptor de emergencia"): set_actions_enabled,
 *	  actions_enabled() and ActionsEnabled(). Deny by default: a send
 *	  happens only when the setting idemgate.actions_enabled is on AND the
 *	  audited row in idemgate.control says enabled. It is checked at the
 *	  effect boundary (claim_effects, and the dispatcher right before each
 *	  send), so queued and claimed effects are held, not lost. Claims,
 *	  approvals and enqueueing keep working while it is off.
 *
 *	  idemgate.control is dumped by pg_dump like the other extension tables;
 *	  CREATE EXTENSION already made the row, so a BEFORE INSERT trigger turns
 *	  the restored row into an update of it (no duplicate key, no second
 *	  row): a database restored with its switch off stays off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "core/args.h"
#include "core/dispatcher_wake.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "policy/killswitch.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_set_actions_enabled);
PG_FUNCTION_INFO_V1(idemgate_actions_enabled);
PG_FUNCTION_INFO_V1(idemgate_control_restore);

static SavedStatement read_switch_stmt = {
	"SELECT actions_enabled FROM idemgate.control WHERE singleton",
	0, {InvalidOid}
};

static SavedStatement lock_switch_stmt = {
	"SELECT actions_enabled FROM idemgate.control WHERE singleton FOR UPDATE",
	0, {InvalidOid}
};

static SavedStatement set_switch_stmt = {
	"UPDATE idemgate.control"
	" SET actions_enabled = $1, changed_at = pg_catalog.now(), changed_by = $2, reason = $3"
	" WHERE singleton",
	3, {BOOLOID, TEXTOID, TEXTOID}
};

static SavedStatement restore_switch_stmt = {
	"UPDATE idemgate.control"
	" SET actions_enabled = $1, changed_at = $2, changed_by = $3, reason = $4"
	" WHERE singleton",
	4, {BOOLOID, TIMESTAMPTZOID, TEXTOID, TEXTOID}
};

/*
 * ActionsEnabled reads both switches now: the setting, then the control
 * row (a missing row counts as off). Must be called inside SPI.
 */
bool
ActionsEnabled(void)
{
	bool		isnull;
	Datum		d;

	if (!IdemgateActionsEnabled)
		return false;
	ExecSavedExpect(&read_switch_stmt, NULL, NULL, false, 1, SPI_OK_SELECT,
					"could not read the kill switch");
	if (SPI_processed != 1)
		return false;
	d = GetResultDatum(0, 1, &isnull);
	return !isnull && DatumGetBool(d);
}

/*
 * idemgate_set_actions_enabled implements set_actions_enabled(enabled,
 * actor, reason): flips the audited switch and records who and why.
 */
Datum
idemgate_set_actions_enabled(PG_FUNCTION_ARGS)
{
	bool		enabled;
	text	   *actor;
	text	   *reason;
	Datum		values[3];
	bool		isnull;
	bool		previous;
	EventDetails details;

	enabled = REQUIRED_ARG(0, "enabled", BOOL);
	actor = TextArg(fcinfo, 1, "actor", IDEMGATE_MAX_NAME_BYTES);
	reason = TextArg(fcinfo, 2, "reason", IDEMGATE_MAX_REASON_BYTES);

	ConnectSPI();
	values[0] = BoolGetDatum(enabled);
	values[1] = PointerGetDatum(actor);
	values[2] = PointerGetDatum(reason);
	previous = DatumGetBool(ExecSavedValue(&lock_switch_stmt, NULL, NULL, false, SPI_OK_SELECT,
										   "the kill switch row in idemgate.control is missing",
										   &isnull));
	ExecSavedExpect(&set_switch_stmt, values, NULL, false, 0, SPI_OK_UPDATE,
					"could not update the kill switch");

	DetailsInit(&details);
	DetailsBool(&details, "enabled", enabled);
	DetailsBool(&details, "previous", previous);
	DetailsBool(&details, "setting", IdemgateActionsEnabled);
	DetailsText(&details, "reason", text_to_cstring(reason));
	RecordEvent(NULL, NULL, "actions_enabled_changed", text_to_cstring(actor),
				DetailsFinish(&details));
	if (enabled)
		WakeDispatcherAtCommit();	/* held effects may go out now */
	SPI_finish();
	PG_RETURN_VOID();
}

/* idemgate_actions_enabled implements actions_enabled(): both switches on. */
Datum
idemgate_actions_enabled(PG_FUNCTION_ARGS)
{
	bool		enabled;

	ConnectSPI();
	enabled = ActionsEnabled();
	SPI_finish();
	PG_RETURN_BOOL(enabled);
}

/*
 * idemgate_control_restore is the BEFORE INSERT row trigger on
 * idemgate.control: when the row already exists (made by CREATE EXTENSION),
 * the inserted values update it and the insert is skipped.
 */
Datum
idemgate_control_restore(PG_FUNCTION_ARGS)
{
	static const char *const columns[4] = {"actions_enabled", "changed_at", "changed_by", "reason"};
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	newtuple;
	TupleDesc	tupdesc;
	Datum		values[4];
	char		nulls[4];
	uint64		updated;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || !TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "idemgate_control_restore must be a BEFORE INSERT row trigger");
	newtuple = trigdata->tg_trigtuple;

	/*
	 * On Citus the trigger is copied to each node's copy of the reference
	 * table (idemgate.control_<shard id>), which Citus itself fills: that
	 * insert is the copy, not a restore.
	 */
	if (strcmp(RelationGetRelationName(trigdata->tg_relation), "control") != 0)
		return PointerGetDatum(newtuple);
	tupdesc = RelationGetDescr(trigdata->tg_relation);
	for (int i = 0; i < 4; i++)
	{
		int			attno = SPI_fnumber(tupdesc, columns[i]);
		bool		isnull;

		if (attno <= 0)
			elog(ERROR, "idemgate.control has no column \"%s\"", columns[i]);
		values[i] = heap_getattr(newtuple, attno, tupdesc, &isnull);
		nulls[i] = isnull ? 'n' : ' ';
	}

	ConnectSPI();
	ExecSavedExpect(&restore_switch_stmt, values, nulls, false, 0, SPI_OK_UPDATE,
					"could not restore the kill switch");
	updated = SPI_processed;
	SPI_finish();
	if (updated > 0)
		return PointerGetDatum(NULL);
	return PointerGetDatum(newtuple);
}
