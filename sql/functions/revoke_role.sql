-- sql/functions/revoke_role.sql

CREATE OR REPLACE FUNCTION idemgate.revoke_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_role';
COMMENT ON FUNCTION idemgate.revoke_role(regrole, text) IS
'Revoke a privilege bundle from a role; rights it holds through its other bundles stay';
REVOKE ALL ON FUNCTION idemgate.revoke_role(regrole,text) FROM PUBLIC;
