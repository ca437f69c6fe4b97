-- sql/functions/publish_alerts.sql

CREATE OR REPLACE FUNCTION idemgate.publish_alerts() RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_publish_alerts';
COMMENT ON FUNCTION idemgate.publish_alerts() IS
'Compare the alerts firing now with those last published and NOTIFY idemgate_alerts once per transition (state firing or cleared); returns the number of notifications. The dispatcher calls it about every second';
REVOKE ALL ON FUNCTION idemgate.publish_alerts() FROM PUBLIC;
