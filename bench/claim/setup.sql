-- The schema both claim benches start from (run.sh, instructions.sh):
-- idemgate, and the baseline's plain table (the columns of idemgate.runs,
-- primary key only, no CHECK, no other index); then keys for the
-- duplicate case on both sides, with a lease that outlives the run.
CREATE EXTENSION idemgate;
CREATE TABLE bench_runs (LIKE idemgate.runs INCLUDING DEFAULTS, PRIMARY KEY (idempotency_key));
SELECT count(*) FROM generate_series(1, 100000) g,
  LATERAL idemgate.claim('dup-' || g,
    '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb, '1 hour') c;
INSERT INTO bench_runs (idempotency_key, state, payload_hash, payload, lease_owner, lease_expires_at, lease_started_at)
SELECT 'dup-' || g, 'processing',
       sha256(convert_to('{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb::text, 'UTF8')),
       '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}', gen_random_uuid(),
       now() + interval '1 hour', now()
FROM generate_series(1, 100000) g;
VACUUM ANALYZE;
