-- sql/functions/renew_lease.sql

CREATE OR REPLACE FUNCTION idemgate.renew_lease(key text, owner uuid, version bigint, extend_by interval)
RETURNS timestamptz
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_renew_lease';
COMMENT ON FUNCTION idemgate.renew_lease(text, uuid, bigint, interval) IS
'Extend a live lease to now() + extend_by; NULL when not the owner or past idemgate.max_lease_life';
REVOKE ALL ON FUNCTION idemgate.renew_lease(text,uuid,bigint,interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.renew_lease(request jsonb)
RETURNS timestamptz
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_renew_lease_request';
COMMENT ON FUNCTION idemgate.renew_lease(jsonb) IS
'renew_lease() with its arguments in one JSON object {key, owner, version, extend_by}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.renew_lease(jsonb) FROM PUBLIC;
