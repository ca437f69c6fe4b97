/*-------------------------------------------------------------------------
 *
 * src/operations/alerts.c
 *	  watch_workflow, unwatch_workflow and publish_alerts: the silence
 *	  watch list and the NOTIFY of alert transitions.
 *
 * Design note. What is firing is defined in SQL (the view
 * idemgate.alert_instances, one row per alert and subject, i.e. effect type
 * or workflow). idemgate.alert_state holds the set last published. One
 * statement (a saved plan) compares both, deletes alerts that stopped
 * firing, upserts the firing ones and returns the transitions; each becomes
 * one NOTIFY idemgate_alerts, delivered when the transaction commits. An
 * alert that keeps firing is announced once, however many failures feed it,
 * and once more when it clears.
 *
 * A payload names the business event, so that a relay can page with it as
 * it is ("run invoice-4471 of workflow invoices failed for good", not
 * "alert firing"): the alert's name, severity, state (firing or cleared),
 * time ("at": when the condition began, as in the alerts view's since; the
 * transition time when it has none), subject (effect type, workflow or
 * database), count, message (cut to IDEMGATE_ALERT_NOTIFY_MESSAGE_CHARS
 * characters, so the payload stays under PostgreSQL's 8000 bytes) and the
 * first keys of alerts about runs. A cleared alert carries what it said
 * last. Anyone who may connect to the database may LISTEN: where that
 * includes roles that must not read workflow names or keys, the superuser
 * turns idemgate.alert_notify_details off and payloads carry only name,
 * severity, state and time (docs/operations.md, "Alerts"); listeners then
 * read the details from the alerts view, which needs the reader bundle.
 *
 * Several dispatchers may call publish_alerts every second. The table lock
 * (SHARE ROW EXCLUSIVE, self-conflicting) makes the compare-and-update one
 * step: the second caller waits, then sees the first one's state and sends
 * nothing. Readers of alert_state are not blocked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "citus/distributed.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "citus/statements.h"
#include "core/idemgate_limits.h"

PG_FUNCTION_INFO_V1(idemgate_watch_workflow);
PG_FUNCTION_INFO_V1(idemgate_unwatch_workflow);
PG_FUNCTION_INFO_V1(idemgate_publish_alerts);

#define ALERT_CHANNEL "idemgate_alerts"


static SavedStatement watch_stmt = {
	"INSERT INTO idemgate.watched_workflows AS w (workflow, expected_interval) VALUES ($1, $2)"
	" ON CONFLICT (workflow) DO UPDATE SET expected_interval = excluded.expected_interval",
	2, {TEXTOID, INTERVALOID}
};

static SavedStatement unwatch_stmt = {
	"DELETE FROM idemgate.watched_workflows WHERE workflow = $1",
	1, {TEXTOID}
};

static SavedStatement lock_state_stmt = {
	"LOCK TABLE idemgate.alert_state IN SHARE ROW EXCLUSIVE MODE",
	0, {InvalidOid}
};

/*
 * On Citus every write of alert_state, a reference table, is a two-phase
 * commit on every node, even one that changes no row (the compare-and-
 * update's DELETE and INSERT). So there publish_alerts first asks, reading
 * only, whether the alerts differ from alert_state, and writes nothing when
 * they do not (docs/citus.md).
 */
static SavedStatement changed_stmt = {
	"WITH cur AS MATERIALIZED ("
	" SELECT alert, subject, severity, message, count, since, keys FROM idemgate.alert_instances"
	"), old AS MATERIALIZED ("
	" SELECT alert, subject, severity, message, count, since, keys FROM idemgate.alert_state"
	")"
	" SELECT EXISTS (SELECT * FROM cur EXCEPT SELECT * FROM old)"
	"     OR EXISTS (SELECT * FROM old EXCEPT SELECT * FROM cur)",
	0, {InvalidOid}
};

/*
 * PUBLISH_STATEMENT(K, SK, EK, SKS, EKS, TK): the compare-and-update and
 * the payloads, with the alerts' first keys (1.2: K ", keys" etc.) or
 * without them (a schema older than 1.2: README.md, "Upgrading").
 */
#define PUBLISH_STATEMENT(K, SK, EK, SKS, EKS, TK) \
	"WITH cur AS MATERIALIZED (" \
	" SELECT alert, subject, severity, message, count, since" K " FROM idemgate.alert_instances" \
	"), gone AS (" \
	" DELETE FROM idemgate.alert_state s" \
	" WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.alert = s.alert AND cur.subject = s.subject)" \
	" RETURNING s.alert, s.subject, s.severity, s.message, s.count, s.since" SK \
	"), fresh AS (" \
	" SELECT cur.* FROM cur" \
	" WHERE NOT EXISTS (SELECT 1 FROM idemgate.alert_state s" \
	"                   WHERE s.alert = cur.alert AND s.subject = cur.subject)" \
	"), kept AS (" \
	" INSERT INTO idemgate.alert_state AS s (alert, subject, severity, message, " \
	"count, since" K ")" \
	" SELECT alert, subject, severity, message, count, since" K " FROM cur" \
	" ON CONFLICT (alert, subject) DO UPDATE" \
	" SET severity = excluded.severity, message = excluded.message, count = excluded.count," \
	"     since = excluded.since" EK ", updated_at = excluded.updated_at" \
	" WHERE (s.severity, s.message, s.count, s.since" SKS ")" \
	"       IS DISTINCT FROM (excluded.severity, excluded.message, excluded.count, " \
	"excluded.since" EKS ")" \
	" RETURNING 1" \
	"), transitions AS (" \
	" SELECT 'cleared'::text AS state, * FROM gone" \
	" UNION ALL" \
	" SELECT 'firing', * FROM fresh" \
	")" \
	" SELECT CASE WHEN $1 THEN pg_catalog.json_strip_nulls(pg_catalog.json_build_object(" \
	"          'alert', t.alert, 'severity', t.severity, 'state', t.state," \
	"          'at', COALESCE(t.since, pg_catalog.now()), 'subject', t.subject, 'count', t.count," \
	"          'message', " \
	"pg_catalog.left(t.message, " CppAsString2(IDEMGATE_ALERT_NOTIFY_MESSAGE_CHARS) ")," \
	"          " TK "))::text" \
	"        ELSE pg_catalog.json_build_object('alert', t.alert, 'severity', t.severity," \
	"          'state', t.state, 'at', COALESCE(t.since, pg_catalog.now()))::text END" \
	" FROM transitions t ORDER BY t.state, t.alert, t.subject"

#define PUBLISH_13 \
	PUBLISH_STATEMENT(", keys", ", s.keys", ", keys = excluded.keys", ", s.keys", \
					  ", excluded.keys", "'keys', t.keys")
#define PUBLISH_11 PUBLISH_STATEMENT("", "", "", "", "", "'keys', NULL::text[]")

/*
 * On one node a generic plan: the statement over alert_instances costs
 * millions of instructions to plan, and the plan cache would plan it
 * again on every pass for its one parameter (bench/README.md). Citus
 * cannot plan it with the parameter in place ("could not create
 * distributed plan"), so there the plan cache's custom plans stay.
 */
static SavedStatement publish_stmt = {PUBLISH_13, 1, {BOOLOID}, GENERIC_PLAN};
static SavedStatement publish_stmt_11 = {PUBLISH_11, 1, {BOOLOID}, GENERIC_PLAN};
static SavedStatement publish_citus_stmt = {PUBLISH_13, 1, {BOOLOID}};

/* PublishStatement returns the statement for the schema installed. */
static SavedStatement *
PublishStatement(void)
{
	Oid			nsp = get_namespace_oid("idemgate", true);
	Oid			state = OidIsValid(nsp) ? get_relname_relid("alert_state", nsp) : InvalidOid;

	if (IdemgateIsDistributed())
		return &publish_citus_stmt;	/* distribute() needs 1.2: keys are there */
	return OidIsValid(state) && get_attnum(state, "keys") != InvalidAttrNumber ?
		&publish_stmt : &publish_stmt_11;
}

/* WorkflowArg returns a required workflow name argument. */
static text *
WorkflowArg(FunctionCallInfo fcinfo, int argno)
{
	return TextArg(fcinfo, argno, "name", IDEMGATE_MAX_NAME_BYTES);
}

/* SessionUserName names the role that called, for the audit trail. */
static const char *
SessionUserName(void)
{
	return GetUserNameFromId(GetSessionUserId(), false);
}

/*
 * idemgate_watch_workflow implements watch_workflow(name, expected_interval):
 * insert or update the watch. Re-watching keeps the original created_at, so
 * it cannot hide a silence that has already begun.
 */
Datum
idemgate_watch_workflow(PG_FUNCTION_ARGS)
{
	text	   *name = WorkflowArg(fcinfo, 0);
	Interval   *expected;
	Datum		values[2];
	EventDetails details;

	expected = IntervalArg(fcinfo, 1, "expected_interval", 0, IDEMGATE_MAX_WATCH_USECS,
						   "Pass how often the workflow normally runs, e.g. "
						   "interval '15 minutes'.");

	ConnectSPI();
	values[0] = PointerGetDatum(name);
	values[1] = IntervalPGetDatum(expected);
	ExecSavedExpect(&watch_stmt, values, NULL, false, 0, SPI_OK_INSERT, "could not watch workflow");

	DetailsInit(&details);
	DetailsText(&details, "workflow", text_to_cstring(name));
	DetailsText(&details, "expected_interval",
				DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(expected))));
	RecordEvent(NULL, NULL, "workflow_watched", SessionUserName(), DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_VOID();
}

/* idemgate_unwatch_workflow implements unwatch_workflow(name). */
Datum
idemgate_unwatch_workflow(PG_FUNCTION_ARGS)
{
	text	   *name = WorkflowArg(fcinfo, 0);
	bool		found;

	ConnectSPI();
	found = ExecSavedByKey(&unwatch_stmt, PointerGetDatum(name), SPI_OK_DELETE,
						   "could not unwatch workflow");
	if (found)
	{
		EventDetails details;

		DetailsInit(&details);
		DetailsText(&details, "workflow", text_to_cstring(name));
		RecordEvent(NULL, NULL, "workflow_unwatched", SessionUserName(), DetailsFinish(&details));
	}
	SPI_finish();
	PG_RETURN_BOOL(found);
}

/*
 * idemgate_publish_alerts implements publish_alerts(): one NOTIFY
 * idemgate_alerts per alert that started or stopped firing since the last
 * call. Returns the number of notifications.
 */
Datum
idemgate_publish_alerts(PG_FUNCTION_ARGS)
{
	uint64		n;
	Datum		details = BoolGetDatum(IdemgateAlertNotifyDetails);

	ConnectSPI();
	if (IdemgateIsDistributed())
	{
		bool		isnull;

		if (!DatumGetBool(ExecSavedValue(&changed_stmt, NULL, NULL, true, SPI_OK_SELECT,
										 "could not compare the alerts with idemgate.alert_state",
										 &isnull)))
		{
			SPI_finish();
			PG_RETURN_INT32(0);
		}
	}
	ExecSavedExpect(&lock_state_stmt, NULL, NULL, false, 0, SPI_OK_UTILITY,
					"could not lock idemgate.alert_state");
	ExecSavedExpect(PublishStatement(), &details, NULL, false, 0, SPI_OK_SELECT,
					"could not compare alerts");
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		payload = GetResultDatum(i, 1, &isnull);

		if (!isnull)
			Async_Notify(ALERT_CHANNEL, TextDatumGetCString(payload));
	}
	SPI_finish();
	PG_RETURN_INT32((int32) n);
}
