-- sql/functions/expire_approvals.sql

CREATE OR REPLACE FUNCTION idemgate.expire_approvals() RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_expire_approvals';
COMMENT ON FUNCTION idemgate.expire_approvals() IS
'Fail every run still waiting on an approval past its expiry: failed_terminal, dead letter (approval_expired) and event; returns how many';
REVOKE ALL ON FUNCTION idemgate.expire_approvals() FROM PUBLIC;
