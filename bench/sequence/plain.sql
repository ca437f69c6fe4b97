-- The same logic as plain SQL statements from the client, on tables shaped
-- like idemgate's (p_runs, p_approvals, p_outbox, p_events: same columns
-- and indexes), the same rows and audit events written, the same three
-- transactions, each check done by the statement's WHERE.
\set n random(1, 9000000000000000000)
INSERT INTO p_runs AS r (idempotency_key, state, payload_hash, payload, lease_owner, lease_expires_at, lease_started_at)
VALUES ('seq-' || :n, 'processing',
        sha256(convert_to('{"order": 4471, "customer": "ACME", "amount": 129.5}'::jsonb::text, 'UTF8')),
        '{"order": 4471, "customer": "ACME", "amount": 129.5}', gen_random_uuid(),
        now() + interval '5 minutes', now())
ON CONFLICT (idempotency_key) DO UPDATE
SET lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
    state = 'processing', version = r.version + 1, updated_at = excluded.lease_started_at
WHERE r.payload_hash = excluded.payload_hash
  AND (r.state = 'failed_retryable' OR (r.state = 'processing' AND r.lease_expires_at < excluded.lease_started_at))
RETURNING lease_owner AS owner, version AS v \gset
BEGIN;
WITH r AS (UPDATE p_runs SET state = 'awaiting_human', version = version + 1, updated_at = now()
           WHERE idempotency_key = 'seq-' || :n AND lease_owner = :owner AND version = :v
             AND state = 'processing' AND lease_expires_at > now()
           RETURNING idempotency_key, version),
     a AS (INSERT INTO p_approvals (approval_id, idempotency_key, token_hash, allowed_decisions,
                                    expires_at, card, effects, run_version)
           SELECT gen_random_uuid(), r.idempotency_key, sha256(convert_to('tok-' || :n, 'UTF8')),
                  '{approve,reject}', now() + interval '24 hours',
                  jsonb_build_object('idempotency_key', r.idempotency_key, 'expires_at', now() + interval '24 hours'),
                  '{"type": "mail", "target": "customer-4471", "payload": {"subject": "Refund approved"}}', r.version
           FROM r RETURNING approval_id)
INSERT INTO p_events (idempotency_key, kind, actor, details)
SELECT r.idempotency_key, 'approval_requested', NULL,
       jsonb_build_object('from', 'processing', 'to', 'awaiting_human', 'version', r.version,
                          'approval_id', a.approval_id, 'expires_at', now() + interval '24 hours') FROM r, a;
COMMIT;
BEGIN;
UPDATE p_approvals SET consumed_at = now(), decision = 'approve', approver_subject = 'alice@example.com'
 WHERE token_hash = sha256(convert_to('tok-' || :n, 'UTF8')) AND consumed_at IS NULL AND expires_at > now()
   AND 'approve' = ANY (allowed_decisions)
RETURNING idempotency_key AS k, run_version AS rv \gset
WITH r AS (UPDATE p_runs SET state = 'approved', version = version + 1, updated_at = now()
           WHERE idempotency_key = :k AND state = 'awaiting_human' AND version = :rv
           RETURNING idempotency_key, version),
     o AS (INSERT INTO p_outbox (effect_id, idempotency_key, effect_type, target, payload)
           SELECT gen_random_uuid(), r.idempotency_key, 'mail', 'customer-4471', '{"subject": "Refund approved"}' FROM r
           ON CONFLICT (idempotency_key, effect_type, target) DO NOTHING RETURNING effect_id)
INSERT INTO p_events (idempotency_key, kind, actor, details)
SELECT r.idempotency_key, 'effects_enqueued', 'alice@example.com', jsonb_build_object('effect_ids', (SELECT jsonb_agg(effect_id) FROM o), 'automatic', false, 'count', 1, 'inserted', 1) FROM r
UNION ALL
SELECT r.idempotency_key, 'approval_decided', 'alice@example.com',
       jsonb_build_object('from', 'awaiting_human', 'to', 'approved', 'version', r.version, 'decision', 'approve') FROM r;
COMMIT;
