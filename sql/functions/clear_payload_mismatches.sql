-- sql/functions/clear_payload_mismatches.sql

CREATE OR REPLACE FUNCTION idemgate.clear_payload_mismatches() RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_clear_payload_mismatches';
COMMENT ON FUNCTION idemgate.clear_payload_mismatches() IS
'Forget this database''s payload mismatch counts once they are investigated (the payload_mismatch alert clears at once; not undone by a rollback); audited as payload_mismatches_cleared. Returns the number of mismatches forgotten';
REVOKE ALL ON FUNCTION idemgate.clear_payload_mismatches() FROM PUBLIC;
