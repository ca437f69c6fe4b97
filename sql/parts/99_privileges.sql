
-- Privileges, last so that it covers every function defined above.
-- Nothing is executable by PUBLIC; bundles are granted with grant_role().
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA idemgate FROM PUBLIC;

-- Operators also read the ledger and the outbox: the runbook for unknown
-- effects and failure alerts starts from outbox rows (effect_id, last_error).
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.runs'),
    ('operator', 'idemgate.outbox');

-- The operator bundle may do everything the other bundles may.
INSERT INTO idemgate.bundle_members (bundle, fn, rel)
SELECT DISTINCT 'operator', fn, rel FROM idemgate.bundle_members WHERE bundle <> 'operator';
