/*-------------------------------------------------------------------------
 *
 * src/metrics.c
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
 * the window. The backlog figures (unknown_effects, dead_letters_open,
 * oldest_dead_letter_age, actions_enabled) are the state now, whatever
 * since says; actions_enabled is read by ActionsEnabled(), like the
 * dispatcher does. Rates are NULL when their denominator is zero.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/timestamp.h"

#include "args.h"
#include "killswitch.h"
#include "spi_util.h"

PG_FUNCTION_INFO_V1(idemgate_metrics);
PG_FUNCTION_INFO_V1(idemgate_prometheus);

#define METRIC_COLUMNS 17

/* The window prometheus() reports, as SQL and as its label. */
#define PROMETHEUS_WINDOW_USECS (7 * USECS_PER_DAY)
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
	"), waits AS ("
	" SELECT"
	"  pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY a.consumed_at - a.created_at) AS p50,"
	"  pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY a.consumed_at - a.created_at) AS p95"
	" FROM idemgate.approvals a"
	" WHERE a.consumed_at >= $1 AND a.consumed_at <= pg_catalog.now()"
	"   AND a.decision IN ('approve', 'reject')"
	"), dl AS ("
	" SELECT pg_catalog.count(*) AS open, pg_catalog.now() - pg_catalog.min(d.dead_at) AS oldest"
	" FROM idemgate.dead_letters d WHERE d.reinjected_at IS NULL"
	")"
	" SELECT firsts.claimed + ev.recovered + ev.duplicates, ev.duplicates,"
	"  ev.duplicates::float8 / NULLIF(firsts.claimed + ev.recovered + ev.duplicates, 0)::float8,"
	"  ev.recovered, ev.approvals_decided, waits.p50, waits.p95,"
	"  ev.validations, ev.invalid::float8 / NULLIF(ev.validations, 0)::float8,"
	"  ev.auto_approved, ev.human_approved, ev.retries, ev.retry_exhausted,"
	"  (SELECT pg_catalog.count(*) FROM idemgate.outbox o WHERE o.state = 'unknown'),"
	"  dl.open, dl.oldest"
	" FROM ev, firsts, waits, dl",
	1, {TIMESTAMPTZOID}
};

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
	TimestampTz since;
	ReturnSetInfo *rsinfo;
	Datum		values[METRIC_COLUMNS];
	bool		nulls[METRIC_COLUMNS];
	MemoryContext outcxt = CurrentMemoryContext;

	RequireArg(fcinfo, 0, "since");
	since = PG_GETARG_TIMESTAMPTZ(0);
	if (since > GetCurrentTransactionStartTimestamp())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"since\" must not be in the future"),
				 errhint("Counts cover [since, now()]; for the last week pass now() - interval '7 days'.")));

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
 * idemgate_prometheus implements prometheus(): metrics(now() - 7 days) in
 * the Prometheus text exposition format. Windowed figures carry the label
 * window="7d"; the backlog figures have no label.
 */
Datum
idemgate_prometheus(PG_FUNCTION_ARGS)
{
	Datum		v[METRIC_COLUMNS];
	bool		n[METRIC_COLUMNS];
	StringInfoData buf;
	const char *w = "window=\"" PROMETHEUS_WINDOW_LABEL "\"";
	const char *w50 = "window=\"" PROMETHEUS_WINDOW_LABEL "\",quantile=\"0.5\"";
	const char *w95 = "window=\"" PROMETHEUS_WINDOW_LABEL "\",quantile=\"0.95\"";
	TimestampTz since = GetCurrentTransactionStartTimestamp() - PROMETHEUS_WINDOW_USECS;
	MemoryContext outcxt = CurrentMemoryContext;	/* outlives SPI_finish */

	ConnectSPI();
	RunMetrics(since, v, n, outcxt);
	SPI_finish();

#define COUNT(i) n[i], n[i] ? 0.0 : (double) DatumGetInt64(v[i])
#define RATE(i) n[i], n[i] ? 0.0 : DatumGetFloat8(v[i])
#define SECS(i) n[i], n[i] ? 0.0 : IntervalSeconds(v[i])

	initStringInfo(&buf);
	AppendMetric(&buf, "idemgate_claims",
				 "Claim calls in the window (claimed, recovered or duplicate).", w, COUNT(0));
	AppendMetric(&buf, "idemgate_duplicates",
				 "Claim calls answered duplicate (same key seen again) in the window.", w, COUNT(1));
	AppendMetric(&buf, "idemgate_duplicate_rate",
				 "Duplicates divided by claims in the window (NaN without claims).", w, RATE(2));
	AppendMetric(&buf, "idemgate_recovered",
				 "Claim calls answered recovered (retryable or expired run taken over) in the window.", w, COUNT(3));
	AppendMetric(&buf, "idemgate_approvals_decided",
				 "Approvals decided by a human (approve or reject) in the window.", w, COUNT(4));
	appendStringInfo(&buf,
					 "# HELP idemgate_approval_wait_seconds Time from approval request to decision, percentiles over the window (NaN without decisions).\n"
					 "# TYPE idemgate_approval_wait_seconds gauge\n"
					 "idemgate_approval_wait_seconds{%s} ", w50);
	AppendFloat(&buf, SECS(5));
	appendStringInfo(&buf, "\nidemgate_approval_wait_seconds{%s} ", w95);
	AppendFloat(&buf, SECS(6));
	appendStringInfoChar(&buf, '\n');
	AppendMetric(&buf, "idemgate_validations",
				 "Validations of model output recorded in the window.", w, COUNT(7));
	AppendMetric(&buf, "idemgate_validation_failure_rate",
				 "Invalid validations divided by validations in the window (NaN without validations).", w, RATE(8));
	AppendMetric(&buf, "idemgate_auto_approved",
				 "Effects enqueued without a human (enqueue_effect calls) in the window.", w, COUNT(9));
	AppendMetric(&buf, "idemgate_human_approved",
				 "Approvals granted by a human in the window.", w, COUNT(10));
	AppendMetric(&buf, "idemgate_retries",
				 "Failed effect attempts that will be retried, in the window.", w, COUNT(11));
	AppendMetric(&buf, "idemgate_retry_exhausted",
				 "Effects dead-lettered after their last attempt in the window.", w, COUNT(12));
	AppendMetric(&buf, "idemgate_unknown_effects",
				 "Effects whose delivery is unknown now (check with the provider, then resolve_effect).", "", COUNT(13));
	AppendMetric(&buf, "idemgate_dead_letters_open",
				 "Dead letters not reinjected now.", "", COUNT(14));
	/* No open dead letter: the oldest is 0 seconds old, not unknown. */
	AppendMetric(&buf, "idemgate_oldest_dead_letter_age_seconds",
				 "Age of the oldest open dead letter (0 when there is none).", "",
				 false, n[15] ? 0.0 : IntervalSeconds(v[15]));
	AppendMetric(&buf, "idemgate_actions_enabled",
				 "1 when external sends are enabled (kill switch and setting both on), else 0.", "",
				 n[16], (!n[16] && DatumGetBool(v[16])) ? 1.0 : 0.0);

	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}
