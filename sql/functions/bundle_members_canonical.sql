-- sql/functions/bundle_members_canonical.sql

CREATE OR REPLACE FUNCTION idemgate.bundle_members_canonical() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_bundle_members_canonical';
COMMENT ON FUNCTION idemgate.bundle_members_canonical() IS
'Trigger: bundle_members.fn must name an existing function and is stored as its schema-qualified regprocedure text';
REVOKE ALL ON FUNCTION idemgate.bundle_members_canonical() FROM PUBLIC;
