/*-------------------------------------------------------------------------
 *
 * src/operations/metrics.c
 *	  metrics(since) and prometheus(): the weekly figures of the seed
 *	  (duplicate rate, approval wait p50/p95, validation failure rate,
 *	  automatic versus human approvals, retry exhaustion) plus the current
 *	  backlog (unknown effects, open dead letters, kill switch).
 *
 * Design note. Everything is counted from the audit trail by one statement
 * (a saved plan) that reads idemgate.events through its (kind, at) index,
 * so the figures are exactly what the events say happened in [since,
 * now()]:
 *   claims            claimed + recovered + duplicate events
 *   approvals_decided approval_decided events; human_approved those with
 *                     decision approve
 *   auto_approved     effects_enqueued events with automatic true (one per
 *                     enqueue_effect call)
 *   validations       validation_recorded events (valid false = failure)
 *   retries           effect_failed events with new_state pending
 *   retry_exhausted   effect_failed events with new_state failed and a
 *                     retryable error class (anything but rejected): the
 *                     last attempt failed and the effect was dead-lettered
 * Approval waits are consumed_at - created_at of the approvals consumed in
 * the window (in seconds, so that live and rolled-up waits mix).
 *
 * Run processing times (run_metrics(since), per workflow). Every change
 * that takes a run out of processing (completed or failed by
 * cas_transition or fail, handed to a human by request_approval, to the
 * outbox by enqueue_effect) records in its event the run's workflow and
 * processing_ms, the time since the claim that started the attempt
 * (runs.lease_started_at, which the claim writes anyway: nothing is added
 * to the claim). That is the figure a lease must cover. run_metrics gives
 * per workflow the attempts measured, p50, p95 and max, and the runs whose
 * retries ran out (fail events with info.retry_exhausted: a retryable
 * failure made terminal by idemgate.max_run_attempts). metrics() keeps its
 * 1.1 row type (a view or a client reading it by position would break on
 * a new column), so these figures have a function of their own.
 *
 * Purge. purge deletes finished runs with their events and approvals; in the
 * same statement it adds what the counts above take from those rows to
 * idemgate.metrics_rollup, one row per UTC hour (counts, the waits as an array
 * of seconds, and the first and last time counted in the hour), see
 * METRICS_ROLLUP_CTES in src/operations/metrics.h. Every figure is the live
 * rows in [since, now()] plus the rolled-up hours that counted something at or
 * after since: exact whenever since does not fall inside a rolled-up hour's
 * [first_at, last_at] (e.g. since on the hour, or purged history older than
 * since), so metrics(since) answers the same after a purge as before it.
 * Nothing is written on the claim or delivery paths. The backlog figures
 * (unknown_effects, dead_letters_open, oldest_dead_letter_age,
 * actions_enabled) are the state now, whatever since says; actions_enabled is
 * read by ActionsEnabled(), like the dispatcher does. Rates are NULL when
 * their denominator is zero.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "policy/killswitch.h"
#include "operations/metrics.h"
#include "citus/statements.h"
#include "core/idemgate_limits.h"

PG_FUNCTION_INFO_V1(idemgate_metrics);
PG_FUNCTION_INFO_V1(idemgate_prometheus);
PG_FUNCTION_INFO_V1(idemgate_effect_type_metrics);
PG_FUNCTION_INFO_V1(idemgate_alerts_firing);
PG_FUNCTION_INFO_V1(idemgate_run_metrics);

#define METRIC_COLUMNS 17

#define PROMETHEUS_WINDOW_LABEL "7d"

static SavedStatement metrics_stmt = {
	"WITH ev AS ("
	" SELECT"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'duplicate') AS duplicates,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'recovered') AS recovered,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'approval_decided') AS approvals_decided,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'approval_decided'"
	"      AND e.details ->> 'decision' = 'approve') AS human_approved,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'validation_recorded') AS validations,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'validation_recorded'"
	"      AND e.details -> 'valid' = 'false'::jsonb) AS invalid,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'effects_enqueued'"
	"      AND e.details -> 'automatic' = 'true'::jsonb) AS auto_approved,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'effect_failed'"
	"      AND e.details ->> 'new_state' = 'pending') AS retries,"
	"  pg_catalog.count(*) FILTER (WHERE e.kind = 'effect_failed'"
	"      AND e.details ->> 'new_state' = 'failed'"
	"      AND e.details ->> 'error_class' IS DISTINCT FROM 'rejected') AS retry_exhausted"
	" FROM idemgate.events e"
	" WHERE e.kind = ANY ('{recovered,duplicate,approval_decided,validation_recorded,"
	"effects_enqueued,effect_failed}'::text[])"
	"   AND e.at >= $1 AND e.at <= pg_catalog.now()"
	"), firsts AS ("
	" SELECT pg_catalog.count(*) AS claimed FROM idemgate.runs r"
	" WHERE r.created_at >= $1 AND r.created_at <= pg_catalog.now()"
	"), ru AS ("
	/* what purge took away: hours with something at or after since */
	" SELECT COALESCE(pg_catalog.sum(m.claimed), 0)::bigint AS claimed,"
	"  COALESCE(pg_catalog.sum(m.duplicates), 0)::bigint AS duplicates,"
	"  COALESCE(pg_catalog.sum(m.recovered), 0)::bigint AS recovered,"
	"  COALESCE(pg_catalog.sum(m.approvals_decided), 0)::bigint AS approvals_decided,"
	"  COALESCE(pg_catalog.sum(m.human_approved), 0)::bigint AS human_approved,"
	"  COALESCE(pg_catalog.sum(m.validations), 0)::bigint AS validations,"
	"  COALESCE(pg_catalog.sum(m.invalid), 0)::bigint AS invalid,"
	"  COALESCE(pg_catalog.sum(m.auto_approved), 0)::bigint AS auto_approved,"
	"  COALESCE(pg_catalog.sum(m.retries), 0)::bigint AS retries,"
	"  COALESCE(pg_catalog.sum(m.retry_exhausted), 0)::bigint AS retry_exhausted"
	" FROM idemgate.metrics_rollup m WHERE m.last_at >= $1"
	"), live_waits AS MATERIALIZED ("
	" SELECT pg_catalog.date_part('epoch', a.consumed_at - a.created_at) AS s"
	" FROM idemgate.approvals a"
	" WHERE a.consumed_at >= $1 AND a.consumed_at <= pg_catalog.now()"
	"   AND a.decision IN ('approve', 'reject')"
	"), waits AS ("
	" SELECT"
	"  pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY w.s) AS p50,"
	"  pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY w.s) AS p95"
	" FROM (SELECT s FROM live_waits"
	"       UNION ALL"
	"       SELECT pg_catalog.unnest(m.approval_waits) FROM idemgate.metrics_rollup m"
	"       WHERE m.last_at >= $1) w"
	"), dl AS ("
	" SELECT pg_catalog.count(*) AS open, pg_catalog.now() - pg_catalog.min(d.dead_at) AS oldest"
	" FROM idemgate.dead_letters d WHERE d.reinjected_at IS NULL"
	"), tot AS ("
	" SELECT firsts.claimed + ru.claimed + ev.recovered + ru.recovered + ev.duplicates + "
	"ru.duplicates AS claims,"
	"  ev.duplicates + ru.duplicates AS duplicates, ev.recovered + ru.recovered AS recovered,"
	"  ev.approvals_decided + ru.approvals_decided AS approvals_decided,"
	"  ev.validations + ru.validations AS validations, ev.invalid + ru.invalid AS invalid,"
	"  ev.auto_approved + ru.auto_approved AS auto_approved,"
	"  ev.human_approved + ru.human_approved AS human_approved,"
	"  ev.retries + ru.retries AS retries, ev.retry_exhausted + ru.retry_exhausted AS "
	"retry_exhausted"
	" FROM ev, firsts, ru"
	")"
	" SELECT tot.claims, tot.duplicates,"
	"  tot.duplicates::float8 / NULLIF(tot.claims, 0)::float8,"
	"  tot.recovered, tot.approvals_decided,"
	"  pg_catalog.make_interval(secs => waits.p50), pg_catalog.make_interval(secs => waits.p95),"
	"  tot.validations, tot.invalid::float8 / NULLIF(tot.validations, 0)::float8,"
	"  tot.auto_approved, tot.human_approved, tot.retries, tot.retry_exhausted,"
	"  (SELECT pg_catalog.count(*) FROM idemgate.outbox o WHERE o.state = 'unknown'),"
	"  dl.open, dl.oldest"
	" FROM tot, waits, dl",
	1, {TIMESTAMPTZOID}
};

/*
 * Per effect type: the backlog now, and the counters since installation
 * (live rows plus what purge rolled up into idemgate.effect_type_rollup).
 * completed_total counts completed effects (completed is final);
 * failed_total counts dead-letterings (effect_failed events with new_state
 * failed), so neither goes down when a dead letter is reinjected or a run
 * purged.
 */
static SavedStatement type_metrics_stmt = {
	"WITH live AS ("
	" SELECT o.effect_type,"
	"  pg_catalog.count(*) FILTER (WHERE o.state = 'pending') AS pending,"
	"  pg_catalog.min(o.created_at) FILTER (WHERE o.state = 'pending') AS oldest,"
	"  pg_catalog.count(*) FILTER (WHERE o.state = 'unknown') AS unknown,"
	"  pg_catalog.count(*) FILTER (WHERE o.state = 'completed') AS completed"
	" FROM idemgate.outbox o GROUP BY o.effect_type"
	"), failed AS ("
	" SELECT o.effect_type, pg_catalog.count(*) AS n"
	" FROM idemgate.events e JOIN idemgate.outbox o ON o.effect_id = e.effect_id/*@join o e*/"
	" WHERE e.kind = 'effect_failed' AND e.details ->> 'new_state' = 'failed'"
	" GROUP BY o.effect_type"
	"), types AS ("
	" SELECT effect_type FROM live"
	" UNION SELECT effect_type FROM idemgate.endpoints"
	" UNION SELECT effect_type FROM idemgate.paused_effect_types"
	" UNION SELECT effect_type FROM idemgate.effect_type_rollup"
	")"
	" SELECT t.effect_type, COALESCE(l.pending, 0),"
	"  COALESCE(pg_catalog.date_part('epoch', pg_catalog.now() - l.oldest), 0)::float8,"
	"  COALESCE(l.unknown, 0),"
	"  (COALESCE(l.completed, 0) + COALESCE(r.completed, 0))::bigint,"
	"  (COALESCE(f.n, 0) + COALESCE(r.failed, 0))::bigint,"
	"  EXISTS (SELECT 1 FROM idemgate.paused_effect_types p WHERE p.effect_type = t.effect_type)"
	" FROM types t"
	" LEFT JOIN live l ON l.effect_type = t.effect_type"
	" LEFT JOIN failed f ON f.effect_type = t.effect_type"
	" LEFT JOIN idemgate.effect_type_rollup r ON r.effect_type = t.effect_type"
	" ORDER BY t.effect_type",
	0, {InvalidOid}
};

/*
 * Sampled reviews per type (effect policies, src/policy/effect_policies.c): the
 * counter kept in the policy row, so purge never lowers it.
 */
static SavedStatement reviews_stmt = {
	"SELECT effect_type, reviews_requested FROM idemgate.effect_type_policies"
	" WHERE review_sample > 0 OR reviews_requested > 0 ORDER BY effect_type",
	0, {InvalidOid}
};

/* Running dispatchers that serve this database. */
static SavedStatement dispatchers_stmt = {
	"SELECT pg_catalog.count(*) FROM idemgate.dispatcher_status() d"
	" WHERE d.database = pg_catalog.current_database()",
	0, {InvalidOid}
};

/*
 * The alerts view, one sample per firing alert; for alerts about runs,
 * also their first keys (joined with ", ").
 */
static SavedStatement alerts_stmt = {
	"SELECT alert, severity, subject, count,"
	"  pg_catalog.array_to_string(keys, ', ') FROM idemgate.alert_instances"
	" ORDER BY alert, subject",
	0, {InvalidOid}
};

/* The same on a schema older than 1.2, whose alerts have no keys. */
static SavedStatement alerts_stmt_11 = {
	"SELECT alert, severity, subject, count, NULL::text FROM idemgate.alert_instances"
	" ORDER BY alert, subject",
	0, {InvalidOid}
};

/*
 * RunMetricsInstalled tells whether the schema is 1.2's (it has
 * idemgate.run_metrics_rollup): between installing this library and ALTER
 * EXTENSION UPDATE it is older (README.md, "Upgrading"), and prometheus()
 * and purge leave out what it does not have yet.
 */
bool
RunMetricsInstalled(void)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("run_metrics_rollup", nsp));
}

/* AlertsStatement returns the alerts statement for the schema installed. */
static SavedStatement *
AlertsStatement(void)
{
	return RunMetricsInstalled() ? &alerts_stmt : &alerts_stmt_11;
}

#define TYPE_METRIC_COLUMNS 7

/*
 * Per workflow: attempts that left processing in [since, now()], their
 * processing time (p50, p95, max) and the runs whose retries ran out, from
 * the events plus what purge rolled up (idemgate.run_metrics_rollup).
 */
static SavedStatement run_metrics_stmt = {
	"WITH facts AS ("
	" SELECT e.details ->> 'workflow' AS workflow,"
	"  (e.details ->> 'processing_ms')::float8 / 1000 AS s,"
	"  COALESCE((e.details -> 'info' ->> 'retry_exhausted')::boolean, false)::int AS exhausted"
	" FROM idemgate.events e"
	" WHERE e.kind = ANY ('{state_changed,effects_enqueued,approval_requested}'::text[])"
	"   AND e.at >= $1 AND e.at <= pg_catalog.now() AND e.details ? 'processing_ms'"
	" UNION ALL"
	" SELECT m.workflow, u.s, 0 FROM idemgate.run_metrics_rollup m,"
	"  LATERAL pg_catalog.unnest(m.processing_seconds) AS u(s)"
	" WHERE m.last_at >= $1"
	" UNION ALL"
	" SELECT m.workflow, NULL, m.retry_exhausted FROM idemgate.run_metrics_rollup m"
	" WHERE m.last_at >= $1 AND m.retry_exhausted > 0"
	")"
	" SELECT f.workflow, pg_catalog.count(f.s),"
	"  pg_catalog.make_interval(secs => pg_catalog.percentile_cont(0.5) WITHIN "
	"GROUP (ORDER BY f.s)),"
	"  pg_catalog.make_interval(secs => pg_catalog.percentile_cont(0.95) WITHIN "
	"GROUP (ORDER BY f.s)),"
	"  pg_catalog.make_interval(secs => pg_catalog.max(f.s)),"
	"  pg_catalog.sum(f.exhausted)::bigint"
	" FROM facts f GROUP BY f.workflow ORDER BY f.workflow NULLS LAST",
	1, {TIMESTAMPTZOID}
};

#define RUN_METRIC_COLUMNS 6

/* SinceArg returns metrics' since argument: required, not in the future. */
static TimestampTz
SinceArg(FunctionCallInfo fcinfo)
{
	TimestampTz since;

	since = REQUIRED_ARG(0, "since", TIMESTAMPTZ);
	if (since > GetCurrentTransactionStartTimestamp())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"since\" must not be in the future"),
				 errhint("Counts cover [since, now()]; for the last week pass now() - "
						 "interval '7 days'.")));
	return since;
}

/*
 * RunRunMetrics runs the per-workflow statement for [since, now()]; the
 * rows are in SPI_tuptable. Must be called inside SPI.
 */
static void
RunRunMetrics(TimestampTz since)
{
	Datum		args[1];

	args[0] = TimestampTzGetDatum(since);
	if (ExecSaved(&run_metrics_stmt, args, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_tuptable->tupdesc->natts != RUN_METRIC_COLUMNS)
		elog(ERROR, "run metrics statement failed");
}

/*
 * RunMetrics runs the metrics statement for [since, now()] and copies the
 * row into values/nulls (by-reference datums in the caller's context).
 * Must be called inside SPI.
 */
static void
RunMetrics(TimestampTz since, Datum *values, bool *nulls, MemoryContext outcxt)
{
	Datum		args[1];

	args[0] = TimestampTzGetDatum(since);
	if (ExecSaved(&metrics_stmt, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1 || SPI_tuptable->tupdesc->natts != METRIC_COLUMNS - 1)
		elog(ERROR, "metrics statement failed");
	for (int i = 0; i < METRIC_COLUMNS - 1; i++)
	{
		Form_pg_attribute att = TupleDescAttr(SPI_tuptable->tupdesc, i);
		Datum		d = GetResultDatum(0, i + 1, &nulls[i]);
		MemoryContext old;

		if (nulls[i])
		{
			values[i] = (Datum) 0;
			continue;
		}
		old = MemoryContextSwitchTo(outcxt);
		values[i] = datumCopy(d, att->attbyval, att->attlen);
		MemoryContextSwitchTo(old);
	}
	/* The kill switch, exactly as the dispatcher reads it. */
	values[METRIC_COLUMNS - 1] = BoolGetDatum(ActionsEnabled());
	nulls[METRIC_COLUMNS - 1] = false;
}

/*
 * idemgate_metrics implements metrics(since): one row of counts over
 * [since, now()] and the current backlog.
 */
Datum
idemgate_metrics(PG_FUNCTION_ARGS)
{
	TimestampTz since = SinceArg(fcinfo);
	ReturnSetInfo *rsinfo;
	Datum		values[METRIC_COLUMNS];
	bool		nulls[METRIC_COLUMNS];
	MemoryContext outcxt = CurrentMemoryContext;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	RunMetrics(since, values, nulls, outcxt);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	SPI_finish();
	return (Datum) 0;
}

/* AppendFloat appends a sample value in the shortest exact form, NaN for NULL. */
static void
AppendFloat(StringInfo buf, bool isnull, double value)
{
	if (isnull)
		appendStringInfoString(buf, "NaN");
	else
		appendStringInfoString(buf, float8out_internal(value));
}

/* AppendSampleEnd closes a sample's labels and appends its value and newline. */
static void
AppendSampleEnd(StringInfo buf, bool isnull, double value)
{
	appendStringInfoString(buf, "} ");
	AppendFloat(buf, isnull, value);
	appendStringInfoChar(buf, '\n');
}


/*
 * AppendMetric appends one metric family with a single sample: HELP, TYPE
 * (always gauge: windowed counts go down as events leave the window) and
 * the sample line with the given labels (may be empty).
 */
static void
AppendMetric(StringInfo buf, const char *name, const char *help,
			 const char *labels, bool isnull, double value)
{
	appendStringInfo(buf, "# HELP %s %s\n# TYPE %s gauge\n%s", name, help, name, name);
	if (labels[0] != '\0')
		appendStringInfo(buf, "{%s}", labels);
	appendStringInfoChar(buf, ' ');
	AppendFloat(buf, isnull, value);
	appendStringInfoChar(buf, '\n');
}

/* IntervalSeconds converts an interval datum to seconds. */
static double
IntervalSeconds(Datum d)
{
	return (double) IntervalToUsecs(DatumGetIntervalP(d)) / USECS_PER_SEC;
}

/*
 * idemgate_run_metrics implements run_metrics(since): one row per workflow
 * (NULL: runs without one) with the attempts that left processing in
 * [since, now()], their processing time p50, p95 and max, and the runs
 * whose retries ran out.
 */
Datum
idemgate_run_metrics(PG_FUNCTION_ARGS)
{
	TimestampTz since = SinceArg(fcinfo);
	ReturnSetInfo *rsinfo;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	RunRunMetrics(since);
	PutResultRows(rsinfo, RUN_METRIC_COLUMNS);
	SPI_finish();
	return (Datum) 0;
}

/*
 * ReturnStatementRows returns the first ncols columns of stmt's rows (run
 * without parameters) as the calling set-returning function's result.
 */
static Datum
ReturnStatementRows(FunctionCallInfo fcinfo, SavedStatement *stmt, int ncols, const char *failure)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ConnectSPI();
	ExecSavedExpect(stmt, NULL, NULL, true, 0, SPI_OK_SELECT, failure);
	PutResultRows((ReturnSetInfo *) fcinfo->resultinfo, ncols);
	SPI_finish();
	return (Datum) 0;
}

/*
 * idemgate_effect_type_metrics implements effect_type_metrics(): one row per
 * effect type with what prometheus() exports for it.
 */
Datum
idemgate_effect_type_metrics(PG_FUNCTION_ARGS)
{
	return ReturnStatementRows(fcinfo, &type_metrics_stmt, TYPE_METRIC_COLUMNS,
							   "effect type metrics statement failed");
}

/*
 * idemgate_alerts_firing implements alerts_firing(): the alerts firing now
 * with subject and count, as prometheus() exports them.
 */
Datum
idemgate_alerts_firing(PG_FUNCTION_ARGS)
{
	return ReturnStatementRows(fcinfo, AlertsStatement(), 4, "alerts statement failed");
}

/*
 * AppendLabel appends name="value" with the value escaped as the text
 * exposition format requires (backslash, double quote, newline).
 */
static void
AppendLabel(StringInfo buf, const char *name, const char *value)
{
	appendStringInfo(buf, "%s=\"", name);
	for (const char *p = value; *p; p++)
	{
		if (*p == '\\')
			appendStringInfoString(buf, "\\\\");
		else if (*p == '"')
			appendStringInfoString(buf, "\\\"");
		else if (*p == '\n')
			appendStringInfoString(buf, "\\n");
		else
			appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

/* A label whose value is a text column of SPI's rows (1-based). */
typedef struct RowLabel
{
	const char *name;
	int			column;
} RowLabel;

/*
 * AppendRowSamples appends a sample of family per row of SPI_tuptable:
 * nlabels labels from the rows' columns (a row with a NULL one has no
 * sample) and the bigint column value_column as its value.
 */
static void
AppendRowSamples(StringInfo buf, const char *family, const RowLabel *labels, int nlabels,
				 int value_column)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;
		Datum		d = SPI_getbinval(tup, desc, value_column, &isnull);
		bool		skip = false;

		for (int l = 0; l < nlabels && !skip; l++)
			skip = SPI_getvalue(tup, desc, labels[l].column) == NULL;
		if (skip)
			continue;
		appendStringInfo(buf, "%s{", family);
		for (int l = 0; l < nlabels; l++)
		{
			if (l > 0)
				appendStringInfoChar(buf, ',');
			AppendLabel(buf, labels[l].name, SPI_getvalue(tup, desc, labels[l].column));
		}
		AppendSampleEnd(buf, isnull, isnull ? 0.0 : (double) DatumGetInt64(d));
	}
}

/* One per-type family: name, help, type, and which column holds the value. */
typedef struct TypeFamily
{
	const char *name;
	const char *help;
	const char *type;
	int			column;			/* 1-based in type_metrics_stmt */
} TypeFamily;

static const TypeFamily type_families[] = {
	{"idemgate_effects_pending", "Pending effects of the type now (due or not).", "gauge", 2},
	{"idemgate_effects_oldest_pending_seconds",
	 "Age of the type's oldest pending effect (0 when none).", "gauge", 3},
	{"idemgate_effects_unknown", "Effects of the type whose delivery is unknown now.", "gauge", 4},
	{"idemgate_effects_completed_total",
	 "Effects of the type completed since installation (purge keeps the count).", "counter", 5},
	{"idemgate_effects_failed_total",
	 "Effects of the type dead-lettered as failed since installation (purge keeps the "
	 "count).", "counter", 6},
	{"idemgate_effects_paused",
	 "1 while the type is paused (pause_effect_type), else 0.", "gauge", 7},
	{NULL, NULL, NULL, 0}
};

/* The labels of the alerts' samples: columns of AlertsStatement(). */
static const RowLabel firing_labels[] = {{"alert", 1}, {"severity", 2}, {"subject", 3}};
static const RowLabel keys_labels[] = {{"alert", 1}, {"subject", 3}, {"keys", 5}};

/*
 * AppendOperations appends the per-type families, the dispatcher gauge and
 * the firing alerts. Must be called inside SPI; the text goes to buf,
 * allocated in outcxt.
 */
static void
AppendOperations(StringInfo buf, MemoryContext outcxt)
{
	SPITupleTable *types;
	uint64		ntypes;
	MemoryContext old;
	bool		isnull;
	double		running;

	ExecSavedExpect(&type_metrics_stmt, NULL, NULL, true, 0, SPI_OK_SELECT,
					"effect type metrics statement failed");
	types = SPI_tuptable;
	ntypes = SPI_processed;
	old = MemoryContextSwitchTo(outcxt);
	for (int f = 0; type_families[f].name != NULL; f++)
	{
		const TypeFamily *tf = &type_families[f];

		appendStringInfo(buf, "# HELP %s %s\n# TYPE %s %s\n", tf->name, tf->help,
						 tf->name, tf->type);
		for (uint64 i = 0; i < ntypes; i++)
		{
			HeapTuple	tup = types->vals[i];
			char	   *type = SPI_getvalue(tup, types->tupdesc, 1);
			Datum		d = SPI_getbinval(tup, types->tupdesc, tf->column, &isnull);
			Oid			typid = SPI_gettypeid(types->tupdesc, tf->column);
			double		v;

			if (typid == FLOAT8OID)
				v = DatumGetFloat8(d);
			else if (typid == BOOLOID)
				v = DatumGetBool(d) ? 1.0 : 0.0;
			else
				v = (double) DatumGetInt64(d);
			appendStringInfoString(buf, tf->name);
			appendStringInfoChar(buf, '{');
			AppendLabel(buf, "effect_type", type);
			AppendSampleEnd(buf, isnull, v);
		}
	}
	MemoryContextSwitchTo(old);

	running = (double) DatumGetInt64(ExecSavedValue(&dispatchers_stmt, NULL, NULL, true,
													SPI_OK_SELECT, "dispatcher count failed",
													&isnull));
	old = MemoryContextSwitchTo(outcxt);
	AppendMetric(buf, "idemgate_dispatchers_running",
				 "Running dispatchers that serve this database (0: HTTP effects are not sent).", "",
				 false, running);
	MemoryContextSwitchTo(old);

	ExecSavedExpect(AlertsStatement(), NULL, NULL, true, 0, SPI_OK_SELECT,
					"alerts statement failed");
	old = MemoryContextSwitchTo(outcxt);
	appendStringInfoString(buf,
						   "# HELP idemgate_alerts_firing Alerts of the idemgate.alerts view "
						   "firing now; the value is the alert's count.\n"
						   "# TYPE idemgate_alerts_firing gauge\n");
	AppendRowSamples(buf, "idemgate_alerts_firing", firing_labels, lengthof(firing_labels), 4);

	/*
	 * The business event of the alerts about runs: which keys. A family of
	 * its own, so that idemgate_alerts_firing keeps one series per alert
	 * and subject while its keys change.
	 */
	appendStringInfoString(buf,
						   "# HELP idemgate_alert_first_keys The first keys of the runs a firing "
						   "alert is about (label keys); the value is the alert's count.\n"
						   "# TYPE idemgate_alert_first_keys gauge\n");
	AppendRowSamples(buf, "idemgate_alert_first_keys", keys_labels, lengthof(keys_labels), 4);
	MemoryContextSwitchTo(old);
}

static const RowLabel type_label = {"effect_type", 1};

/*
 * AppendReviewMetrics appends idemgate_reviews_requested_total per effect
 * type: enqueue_effect calls that review_sample turned into an approval
 * request. Nothing before the 1.2 schema. Must be called inside SPI; the
 * text goes to buf, allocated in outcxt.
 */
static void
AppendReviewMetrics(StringInfo buf, MemoryContext outcxt)
{
	Oid			nsp = get_namespace_oid("idemgate", true);
	MemoryContext old;

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("effect_type_policies", nsp)))
		return;
	ExecSavedExpect(&reviews_stmt, NULL, NULL, true, 0, SPI_OK_SELECT,
					"review count statement failed");
	old = MemoryContextSwitchTo(outcxt);
	appendStringInfoString(buf,
						   "# HELP idemgate_reviews_requested_total enqueue_effect calls turned "
						   "into an approval request by the type's review_sample, "
						   "since its policy was set.\n"
						   "# TYPE idemgate_reviews_requested_total counter\n");
	AppendRowSamples(buf, "idemgate_reviews_requested_total", &type_label, 1, 2);
	MemoryContextSwitchTo(old);
}

/* One per-workflow family of run_metrics_stmt's columns. */
typedef struct RunFamily
{
	const char *name;
	const char *help;
	int			column;			/* 1-based in run_metrics_stmt */
} RunFamily;

static const RunFamily run_families[] = {
	{"idemgate_run_attempts",
	 "Run attempts that left processing in the window (completed, failed, or handed to an approval "
	 "or the outbox).", 2},
	{"idemgate_run_processing_p50_seconds",
	 "Median processing time of a run attempt, from its claim to leaving processing, over the "
	 "window (NaN without attempts): what a lease is sized from.", 3},
	{"idemgate_run_processing_p95_seconds",
	 "95th percentile of the processing time of a run attempt over the window (NaN without "
	 "attempts).", 4},
	{"idemgate_run_processing_max_seconds",
	 "Longest processing time of a run attempt over the window (NaN without attempts).", 5},
	{"idemgate_run_retry_exhausted",
	 "Runs failed for good after idemgate.max_run_attempts retryable failures in the window.", 6},
	{NULL, NULL, 0}
};

/*
 * AppendRunMetrics appends run_metrics(since) as gauges labelled with the
 * window and the workflow ("" for runs without one). Must be called inside
 * SPI; the text goes to buf, allocated in outcxt.
 */
static void
AppendRunMetrics(StringInfo buf, TimestampTz since, const char *window, MemoryContext outcxt)
{
	MemoryContext old;

	RunRunMetrics(since);
	old = MemoryContextSwitchTo(outcxt);
	for (int f = 0; run_families[f].name != NULL; f++)
	{
		const RunFamily *rf = &run_families[f];

		appendStringInfo(buf, "# HELP %s %s\n# TYPE %s gauge\n", rf->name, rf->help, rf->name);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			char	   *workflow = SPI_getvalue(tup, SPI_tuptable->tupdesc, 1);
			bool		isnull;
			Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, rf->column, &isnull);
			double		v = 0.0;

			if (!isnull)
				v = SPI_gettypeid(SPI_tuptable->tupdesc, rf->column) == INTERVALOID ?
					IntervalSeconds(d) : (double) DatumGetInt64(d);
			appendStringInfo(buf, "%s{%s,", rf->name, window);
			AppendLabel(buf, "workflow", workflow ? workflow : "");
			AppendSampleEnd(buf, isnull, v);
		}
	}
	MemoryContextSwitchTo(old);
}

/* How a column of metrics() becomes a sample. */
typedef enum ValueKind
{
	VALUE_COUNT,				/* bigint */
	VALUE_RATE,					/* float8 */
	VALUE_SECONDS				/* interval */
} ValueKind;

/* A family of one sample from a column of metrics(). */
typedef struct MetricFamily
{
	const char *name;
	const char *help;
	ValueKind	kind;
} MetricFamily;

/* The first columns of metrics(), in order: the windowed ones, then the backlog's. */
static const MetricFamily metric_families[] = {
	{"idemgate_claims", "Claim calls in the window (claimed, recovered or duplicate).",
	 VALUE_COUNT},
	{"idemgate_duplicates", "Claim calls answered duplicate (same key seen again) in the window.",
	 VALUE_COUNT},
	{"idemgate_duplicate_rate",
	 "Duplicates divided by claims in the window (NaN without claims).", VALUE_RATE},
	{"idemgate_recovered",
	 "Claim calls answered recovered (retryable or expired run taken over) in the window.",
	 VALUE_COUNT},
	{"idemgate_approvals_decided",
	 "Approvals decided by a human (approve or reject) in the window.", VALUE_COUNT},

	/*
	 * Two gauges, not one family with a quantile label: that label is
	 * reserved for summaries, whose _sum and _count are counters since
	 * start, and these percentiles are over a window.
	 */
	{"idemgate_approval_wait_p50_seconds",
	 "Median time from approval request to decision over the window (NaN without decisions).",
	 VALUE_SECONDS},
	{"idemgate_approval_wait_p95_seconds",
	 "95th percentile of the time from approval request to decision over the window "
	 "(NaN without decisions).", VALUE_SECONDS},
	{"idemgate_validations", "Validations of model output recorded in the window.", VALUE_COUNT},
	{"idemgate_validation_failure_rate",
	 "Invalid validations divided by validations in the window (NaN without validations).",
	 VALUE_RATE},
	{"idemgate_auto_approved",
	 "Effects enqueued without a human (enqueue_effect calls) in the window.", VALUE_COUNT},
	{"idemgate_human_approved", "Approvals granted by a human in the window.", VALUE_COUNT},
	{"idemgate_retries", "Failed effect attempts that will be retried, in the window.",
	 VALUE_COUNT},
	{"idemgate_retry_exhausted", "Effects dead-lettered after their last attempt in the window.",
	 VALUE_COUNT},
	{"idemgate_unknown_effects",
	 "Effects whose delivery is unknown now (check with the provider, then resolve_effect).",
	 VALUE_COUNT},
	{"idemgate_dead_letters_open", "Dead letters not reinjected now.", VALUE_COUNT},
};

/* How many of metric_families carry the window label. */
#define WINDOWED_FAMILIES 13

/*
 * idemgate_prometheus implements prometheus(): metrics(now() - 7 days) in
 * the Prometheus text exposition format. Windowed figures carry the label
 * window="7d"; the backlog figures have no label. Then the per-type
 * families (label effect_type), idemgate_dispatchers_running,
 * idemgate_alerts_firing (labels alert, severity, subject) and
 * idemgate_reviews_requested_total (label effect_type).
 */
Datum
idemgate_prometheus(PG_FUNCTION_ARGS)
{
	Datum		v[METRIC_COLUMNS];
	bool		n[METRIC_COLUMNS];
	StringInfoData buf;
	StringInfoData ops;
	StringInfoData runs;
	const char *w = "window=\"" PROMETHEUS_WINDOW_LABEL "\"";
	TimestampTz since = GetCurrentTransactionStartTimestamp() - IDEMGATE_PROMETHEUS_WINDOW_USECS;
	MemoryContext outcxt = CurrentMemoryContext;	/* outlives SPI_finish */

	initStringInfo(&ops);		/* in outcxt */
	initStringInfo(&runs);
	ConnectSPI();
	RunMetrics(since, v, n, outcxt);
	if (RunMetricsInstalled())
		AppendRunMetrics(&runs, since, w, outcxt);
	AppendOperations(&ops, outcxt);
	AppendReviewMetrics(&ops, outcxt);
	SPI_finish();

	initStringInfo(&buf);
	for (int i = 0; i < lengthof(metric_families); i++)
	{
		const MetricFamily *mf = &metric_families[i];
		double		value = 0.0;

		/* Beside the windowed ones, the runs' retry exhaustion and processing times. */
		if (i == WINDOWED_FAMILIES)
			appendBinaryStringInfo(&buf, runs.data, runs.len);
		if (!n[i])
			value = mf->kind == VALUE_COUNT ? (double) DatumGetInt64(v[i]) :
				mf->kind == VALUE_RATE ? DatumGetFloat8(v[i]) : IntervalSeconds(v[i]);
		AppendMetric(&buf, mf->name, mf->help, i < WINDOWED_FAMILIES ? w : "", n[i], value);
	}
	/* No open dead letter: the oldest is 0 seconds old, not unknown. */
	AppendMetric(&buf, "idemgate_oldest_dead_letter_age_seconds",
				 "Age of the oldest open dead letter (0 when there is none).", "",
				 false, n[15] ? 0.0 : IntervalSeconds(v[15]));
	AppendMetric(&buf, "idemgate_actions_enabled",
				 "1 when external sends are enabled (kill switch and setting both on), else 0.", "",
				 n[16], (!n[16] && DatumGetBool(v[16])) ? 1.0 : 0.0);
	appendBinaryStringInfo(&buf, ops.data, ops.len);

	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}
