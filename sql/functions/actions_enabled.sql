-- sql/functions/actions_enabled.sql

CREATE OR REPLACE FUNCTION idemgate.actions_enabled() RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_actions_enabled';
COMMENT ON FUNCTION idemgate.actions_enabled() IS
'True when external sends may happen: the kill switch and the setting idemgate.actions_enabled are both on';
REVOKE ALL ON FUNCTION idemgate.actions_enabled() FROM PUBLIC;
