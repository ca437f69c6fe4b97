-- sql/functions/control_restore.sql

-- pg_dump keeps the switch: the control row is dumped, and restoring it
-- updates the row CREATE EXTENSION made instead of adding a second one.
CREATE OR REPLACE FUNCTION idemgate.control_restore() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_control_restore';
COMMENT ON FUNCTION idemgate.control_restore() IS
'Trigger: a restored kill switch row (pg_dump) updates the existing row instead of duplicating it';
REVOKE ALL ON FUNCTION idemgate.control_restore() FROM PUBLIC;
