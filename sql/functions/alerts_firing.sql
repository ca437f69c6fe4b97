-- sql/functions/alerts_firing.sql

CREATE OR REPLACE FUNCTION idemgate.alerts_firing()
RETURNS TABLE(alert text, severity text, subject text, count bigint)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET jit = off
AS 'MODULE_PATHNAME', 'idemgate_alerts_firing';
COMMENT ON FUNCTION idemgate.alerts_firing() IS
'The alerts firing now with their subject (effect type, workflow or database) and count: what prometheus() exports as idemgate_alerts_firing{alert, severity, subject}';
REVOKE ALL ON FUNCTION idemgate.alerts_firing() FROM PUBLIC;
