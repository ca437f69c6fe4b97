-- sql/functions/grant_role.sql

CREATE OR REPLACE FUNCTION idemgate.grant_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_role';
COMMENT ON FUNCTION idemgate.grant_role(regrole, text) IS
'Grant a privilege bundle (client, approver, operator, reader) to a role';
REVOKE ALL ON FUNCTION idemgate.grant_role(regrole,text) FROM PUBLIC;
