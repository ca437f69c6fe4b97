/*-------------------------------------------------------------------------
 *
 * src/operations/metrics.h
 *	  The hourly rollup that keeps metrics() the same across purge.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_METRICS_H
#define IDEMGATE_METRICS_H

/*
 * METRICS_ROLLUP_CTES are data-modifying CTEs for purge's statement: given
 * a CTE named doomed (idempotency_key of the runs about to be deleted, in
 * the same statement, so the same snapshot), they add to
 * idemgate.metrics_rollup, per UTC hour, what metrics() counts from those
 * runs' rows (the run's first claim, its events, its decided approvals'
 * waits), and to idemgate.effect_type_rollup, per effect type, what
 * effect_type_metrics() counts (completed effects, dead-lettered failures).
 * RUN_METRICS_ROLLUP_CTES adds to idemgate.run_metrics_rollup (1.2), per
 * UTC hour and workflow, what run_metrics() counts (processing times in
 * seconds, exhausted retries); RunMetricsInstalled() tells whether the
 * schema has that table yet (README.md, "Upgrading"). The figures are the
 * same as in metrics_stmt, type_metrics_stmt and run_metrics_stmt
 * (src/operations/metrics.c): change them together. Both start with a comma. On
 * Citus purge runs them one shard at a time: each scan of a per-run table
 * carries a / *@buckets* / marker (src/citus/statements.c).
 */
#define METRICS_ROLLUP_CTES \
	", facts AS (" \
	" SELECT e.at AS t, 0 AS claimed," \
	"  (e.kind = 'duplicate')::int AS duplicates," \
	"  (e.kind = 'recovered')::int AS recovered," \
	"  (e.kind = 'approval_decided')::int AS approvals_decided," \
	"  (e.kind = 'approval_decided' AND e.details ->> 'decision' = 'approve')::int AS " \
	"human_approved," \
	"  (e.kind = 'validation_recorded')::int AS validations," \
	"  (e.kind = 'validation_recorded' " \
	"AND e.details -> 'valid' = 'false'::jsonb)::int AS invalid," \
	"  (e.kind = 'effects_enqueued' AND e.details -> 'automatic' = 'true'::jsonb)::int AS " \
	"auto_approved," \
	"  (e.kind = 'effect_failed' AND e.details ->> 'new_state' = 'pending')::int AS retries," \
	"  (e.kind = 'effect_failed' AND e.details ->> 'new_state' = 'failed'" \
	"   AND e.details ->> 'error_class' IS DISTINCT FROM 'rejected')::int AS retry_exhausted," \
	"  NULL::float8 AS wait" \
	" FROM idemgate.events e JOIN doomed x ON e.idempotency_key = x.idempotency_key" \
	" WHERE e.kind = ANY ('{recovered,duplicate,approval_decided,validation_recorded," \
	"effects_enqueued,effect_failed}'::text[])/*@buckets e*/" \
	" UNION ALL" \
	" SELECT r.created_at, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL" \
	" FROM idemgate.runs r JOIN doomed x ON r.idempotency_key = x.idempotency_key/*@buckets r*/" \
	" UNION ALL" \
	" SELECT a.consumed_at, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0," \
	"  pg_catalog.date_part('epoch', a.consumed_at - a.created_at)" \
	" FROM idemgate.approvals a JOIN doomed x ON a.idempotency_key = x.idempotency_key" \
	" WHERE a.consumed_at IS NOT NULL AND a.decision IN ('approve', 'reject')/*@buckets a*/" \
	"), rolled AS (" \
	" INSERT INTO idemgate.metrics_rollup AS m (hour, first_at, last_at, claimed, duplicates," \
	"   recovered, approvals_decided, human_approved, validations, invalid, auto_approved," \
	"   retries, retry_exhausted, approval_waits)" \
	" SELECT pg_catalog.date_trunc('hour', f.t, 'UTC'), pg_catalog.min(f.t), pg_catalog.max(f.t)," \
	"  pg_catalog.sum(f.claimed), pg_catalog.sum(f.duplicates), pg_catalog.sum(f.recovered)," \
	"  pg_catalog.sum(f.approvals_decided), pg_catalog.sum(f.human_approved)," \
	"  pg_catalog.sum(f.validations), pg_catalog.sum(f.invalid), pg_catalog.sum(f.auto_approved)," \
	"  pg_catalog.sum(f.retries), pg_catalog.sum(f.retry_exhausted)," \
	"  COALESCE(pg_catalog.array_agg(f.wait) FILTER (WHERE f.wait IS NOT NULL), '{}')" \
	" FROM facts f GROUP BY 1" \
	" ON CONFLICT (hour) DO UPDATE SET" \
	"  first_at = LEAST(m.first_at, excluded.first_at), last_at = GREATEST(m.last_at, " \
	"excluded.last_at)," \
	"  claimed = m.claimed + excluded.claimed, duplicates = m.duplicates + excluded.duplicates," \
	"  recovered = m.recovered + excluded.recovered," \
	"  approvals_decided = m.approvals_decided + excluded.approvals_decided," \
	"  human_approved = m.human_approved + excluded.human_approved," \
	"  validations = m.validations + excluded.validations, invalid = m.invalid + " \
	"excluded.invalid," \
	"  auto_approved = m.auto_approved + excluded.auto_approved," \
	"  retries = m.retries + excluded.retries," \
	"  retry_exhausted = m.retry_exhausted + excluded.retry_exhausted," \
	"  approval_waits = m.approval_waits || excluded.approval_waits" \
	" RETURNING 1" \
	"), typed AS (" \
	" INSERT INTO idemgate.effect_type_rollup AS r (effect_type, completed, failed)" \
	" SELECT o.effect_type, pg_catalog.count(*) FILTER (WHERE o.state = 'completed')," \
	"  COALESCE(pg_catalog.sum(df.n), 0)" \
	" FROM idemgate.outbox o JOIN doomed x ON o.idempotency_key = x.idempotency_key/*@buckets o*/" \
	" LEFT JOIN (SELECT e.effect_id, pg_catalog.count(*) AS n" \
	"   FROM idemgate.events e JOIN doomed y ON e.idempotency_key = y.idempotency_key" \
	"   WHERE e.kind = 'effect_failed' AND e.details ->> 'new_state' = 'failed'/*@buckets e*/" \
	"   GROUP BY e.effect_id) df ON df.effect_id = o.effect_id" \
	" GROUP BY o.effect_type" \
	" ON CONFLICT (effect_type) DO UPDATE SET" \
	"  completed = r.completed + excluded.completed, failed = r.failed + excluded.failed" \
	" RETURNING 1" \
	")"

#define RUN_METRICS_ROLLUP_CTES \
	", run_facts AS (" \
	" SELECT e.at AS t, e.details ->> 'workflow' AS workflow," \
	"  (e.details ->> 'processing_ms')::float8 / 1000 AS s," \
	"  COALESCE((e.details -> 'info' ->> 'retry_exhausted')::boolean, false)::int AS exhausted" \
	" FROM idemgate.events e JOIN doomed x ON e.idempotency_key = x.idempotency_key" \
	" WHERE e.kind = ANY ('{state_changed,effects_enqueued,approval_requested}'::text[])" \
	"   AND e.details ? 'processing_ms'/*@buckets e*/" \
	"), run_rolled AS (" \
	" INSERT INTO idemgate.run_metrics_rollup AS m (hour, workflow, first_at, last_at," \
	"   processing_seconds, retry_exhausted)" \
	" SELECT pg_catalog.date_trunc('hour', f.t, 'UTC'), f.workflow, pg_catalog.min(f.t), " \
	"pg_catalog.max(f.t)," \
	"  pg_catalog.array_agg(f.s), pg_catalog.sum(f.exhausted)" \
	" FROM run_facts f GROUP BY 1, 2" \
	" ON CONFLICT (hour, workflow) DO UPDATE SET" \
	"  first_at = LEAST(m.first_at, excluded.first_at), last_at = GREATEST(m.last_at, " \
	"excluded.last_at)," \
	"  processing_seconds = m.processing_seconds || excluded.processing_seconds," \
	"  retry_exhausted = m.retry_exhausted + excluded.retry_exhausted" \
	" RETURNING 1" \
	")"

extern bool RunMetricsInstalled(void);

#endif
