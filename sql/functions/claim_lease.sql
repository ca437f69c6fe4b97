-- sql/functions/claim_lease.sql

CREATE OR REPLACE FUNCTION idemgate.claim_lease(key text, payload_hash bytea, owner uuid, lease interval)
RETURNS TABLE(idempotency_key text, lease_owner uuid, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_lease';
COMMENT ON FUNCTION idemgate.claim_lease(text, bytea, uuid, interval) IS
'The single atomic claim statement: one row when claimed or recovered, none when the key is busy or finished';
REVOKE ALL ON FUNCTION idemgate.claim_lease(text,bytea,uuid,interval) FROM PUBLIC;
