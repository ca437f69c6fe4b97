-- sql/functions/effect_type_metrics.sql

CREATE OR REPLACE FUNCTION idemgate.effect_type_metrics()
RETURNS TABLE(effect_type text, pending bigint, oldest_pending_seconds double precision,
                         unknown bigint, completed_total bigint, failed_total bigint, paused boolean)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET jit = off
AS 'MODULE_PATHNAME', 'idemgate_effect_type_metrics';
COMMENT ON FUNCTION idemgate.effect_type_metrics() IS
'Per effect type, what prometheus() exports: pending effects, age of the oldest pending one in seconds (0 when none), unknown effects, completed effects and dead-lettered failures since installation (purge keeps them), paused';
REVOKE ALL ON FUNCTION idemgate.effect_type_metrics() FROM PUBLIC;
