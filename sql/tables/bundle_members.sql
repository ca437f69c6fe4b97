-- sql/tables/bundle_members.sql

-- Privilege bundles: which function or relation each bundle may use.
-- grant_role/revoke_role read this table; each feature's SQL part adds its rows.
-- fn is the signature as text, not regprocedure: pg_upgrade refuses user
-- columns of reg* types other than regclass, regrole and regtype. The trigger
-- checks it names an existing function and stores regprocedure's output with
-- search_path = pg_catalog, pg_temp, so it is always the schema-qualified
-- canonical form (what p.oid::regprocedure::text prints).
CREATE TABLE idemgate.bundle_members (
    bundle   text NOT NULL CHECK (bundle IN ('client', 'approver', 'operator', 'reader')),
    fn       text,
    rel      regclass,
    -- For a relation: the columns the bundle reads (grant_role grants
    -- SELECT on those only; NULL: all of them).
    columns  text[],
    CHECK ((fn IS NULL) <> (rel IS NULL))
);

COMMENT ON TABLE idemgate.bundle_members IS 'What each privilege bundle may execute or read; used by grant_role and revoke_role';

CREATE TRIGGER bundle_members_canonical BEFORE INSERT OR UPDATE OF fn ON idemgate.bundle_members
FOR EACH ROW EXECUTE FUNCTION idemgate.bundle_members_canonical();

COMMENT ON COLUMN idemgate.bundle_members.columns IS
'For a relation: the columns the bundle reads (NULL: all of them)';

REVOKE ALL ON idemgate.bundle_members FROM PUBLIC;
