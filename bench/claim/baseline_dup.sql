-- The seed's duplicate path: the same statement on a key that exists (it
-- returns no row), then a SELECT of the stored state and result.
\set n random(1, 100000)
INSERT INTO bench_runs AS r (idempotency_key, state, payload_hash, payload, lease_owner, lease_expires_at, lease_started_at)
VALUES ('dup-' || :n, 'processing',
        sha256(convert_to('{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb::text, 'UTF8')),
        '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb,
        gen_random_uuid(), now() + interval '5 minutes', now())
ON CONFLICT (idempotency_key) DO UPDATE
SET lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
    state = 'processing', version = r.version + 1, updated_at = excluded.lease_started_at
WHERE r.payload_hash = excluded.payload_hash
  AND (r.state = 'failed_retryable' OR (r.state = 'processing' AND r.lease_expires_at < excluded.lease_started_at))
RETURNING idempotency_key, lease_owner, version;
SELECT state, version, result, payload_hash FROM bench_runs WHERE idempotency_key = 'dup-' || :n;
