-- sql/functions/run_metrics.sql

CREATE OR REPLACE FUNCTION idemgate.run_metrics(since timestamptz DEFAULT pg_catalog.now() - interval '7 days')
RETURNS TABLE(workflow text, attempts bigint, processing_p50 interval, processing_p95 interval,
                         processing_max interval, retry_exhausted bigint)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET jit = off
AS 'MODULE_PATHNAME', 'idemgate_run_metrics';
COMMENT ON FUNCTION idemgate.run_metrics(timestamptz) IS
'Per workflow (NULL: runs without one), over [since, now()]: attempts that left processing (completed, failed, or handed to an approval or the outbox), their processing time from the claim (p50, p95, max: what a lease is sized from), and runs failed for good after idemgate.max_run_attempts retryable failures (beside metrics().retry_exhausted, which counts effects); purge keeps the figures';
REVOKE ALL ON FUNCTION idemgate.run_metrics(timestamp with time zone) FROM PUBLIC;
