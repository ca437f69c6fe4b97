
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
SELECT DISTINCT 'operator', b.fn, b.rel FROM idemgate.bundle_members b
WHERE b.bundle <> 'operator'
  AND NOT EXISTS (SELECT 1 FROM idemgate.bundle_members o WHERE o.bundle = 'operator'
                  AND o.fn IS NOT DISTINCT FROM b.fn AND o.rel IS NOT DISTINCT FROM b.rel);
