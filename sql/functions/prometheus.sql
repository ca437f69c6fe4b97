-- sql/functions/prometheus.sql

CREATE OR REPLACE FUNCTION idemgate.prometheus() RETURNS text
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET jit = off
AS 'MODULE_PATHNAME', 'idemgate_prometheus';
COMMENT ON FUNCTION idemgate.prometheus() IS
'metrics() over the last 7 days in the Prometheus text exposition format: gauges named idemgate_*, windowed ones labelled window="7d"; per workflow (label workflow) idemgate_run_attempts, _run_processing_p50_seconds, _p95_seconds, _max_seconds, idemgate_run_retry_exhausted; per effect type (label effect_type) idemgate_effects_pending, _oldest_pending_seconds, _unknown, _completed_total, _failed_total, _paused; idemgate_dispatchers_running; idemgate_alerts_firing per alert and idemgate_alert_first_keys for alerts about runs';
REVOKE ALL ON FUNCTION idemgate.prometheus() FROM PUBLIC;
