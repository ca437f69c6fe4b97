
-- Privileges, last so that it covers every function defined above.
-- Nothing is executable by PUBLIC; bundles are granted with grant_role().
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA idemgate FROM PUBLIC;

-- The operator bundle may do everything the other bundles may.
INSERT INTO idemgate.bundle_members (bundle, fn, rel)
SELECT DISTINCT 'operator', fn, rel FROM idemgate.bundle_members WHERE bundle <> 'operator';
