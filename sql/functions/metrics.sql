-- sql/functions/metrics.sql

CREATE OR REPLACE FUNCTION idemgate.metrics(since timestamptz DEFAULT pg_catalog.now() - interval '7 days')
RETURNS TABLE(claims bigint, duplicates bigint, duplicate_rate double precision,
                         recovered bigint, approvals_decided bigint,
                         approval_wait_p50 interval, approval_wait_p95 interval,
                         validations bigint, validation_failure_rate double precision,
                         auto_approved bigint, human_approved bigint, retries bigint,
                         retry_exhausted bigint, unknown_effects bigint, dead_letters_open bigint,
                         oldest_dead_letter_age interval, actions_enabled boolean)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_metrics';
COMMENT ON FUNCTION idemgate.metrics(timestamptz) IS
'One row of figures over [since, now()] (claims, duplicates and their rate, recoveries, approvals and their wait p50/p95, validations and their failure rate, automatic versus human approvals, retries, retry exhaustion) plus the current backlog (unknown effects, open dead letters, oldest dead letter age, kill switch). Rates are NULL when nothing was counted';
REVOKE ALL ON FUNCTION idemgate.metrics(timestamp with time zone) FROM PUBLIC;
