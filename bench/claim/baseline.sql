-- The seed's bare claim: one INSERT ... ON CONFLICT ... RETURNING on a plain
-- table (bench_runs: the columns of idemgate.runs, primary key only, no
-- CHECK, no other index), payload stored, SHA-256 hash, random owner.
\set n random(1, 9000000000000000000)
INSERT INTO bench_runs AS r (idempotency_key, state, payload_hash, payload, lease_owner, lease_expires_at, lease_started_at)
VALUES ('bench-' || :n, 'processing',
        sha256(convert_to('{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb::text, 'UTF8')),
        '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb,
        gen_random_uuid(), now() + interval '5 minutes', now())
ON CONFLICT (idempotency_key) DO UPDATE
SET lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
    state = 'processing', version = r.version + 1, updated_at = excluded.lease_started_at
WHERE r.payload_hash = excluded.payload_hash
  AND (r.state = 'failed_retryable' OR (r.state = 'processing' AND r.lease_expires_at < excluded.lease_started_at))
RETURNING idempotency_key, lease_owner, version;
