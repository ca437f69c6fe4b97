-- Run ledger: claim outcomes, leases, CAS, renew, fail, supersede.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- A webhook delivered twice: the first call claims, the second is a duplicate
-- that sees the stored state and no owner.
SELECT outcome, idempotency_key, state, lease_owner, version, result
  FROM idemgate.claim('runs-1', '{"invoice": 4471}', '5 minutes', 'billing',
                      '00000000-0000-4000-8000-000000000001');
SELECT outcome, state, lease_owner IS NULL AS no_owner, version
  FROM idemgate.claim('runs-1', '{"invoice": 4471}');
-- The same payload with keys in another order is the same payload.
SELECT outcome FROM idemgate.claim('runs-1', '{ "invoice" : 4471 }');
-- A changed payload under the same key is refused: IG001, nothing written.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('runs-1', '{"invoice": 4472}')$$);
SELECT count(*) AS duplicate_events FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'duplicate';

-- The stored hash is SHA-256 of the canonical jsonb text, as hash_payload says.
SELECT payload_hash = idemgate.hash_payload('{"invoice": 4471}') AS same_hash,
       payload_hash = sha256(convert_to('{"invoice": 4471}'::jsonb::text, 'UTF8')) AS client_can_compute,
       payload = '{"invoice": 4471}' AS payload_stored, workflow
  FROM idemgate.runs WHERE idempotency_key = 'runs-1';

-- A fresh owner is generated when none is given, and is random.
SELECT a.lease_owner IS NOT NULL AND b.lease_owner IS NOT NULL AND a.lease_owner <> b.lease_owner AS distinct_owners
  FROM idemgate.claim('runs-2a', '{}') a, idemgate.claim('runs-2b', '{}') b;

-- CAS: only the live owner at the current version moves the run.
SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-0000000000ff', 0, 'completed') AS stranger;
SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 7, 'completed') AS stale_version;
SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 0, 'completed',
                               '{"message_id": "m-1", "model": "gpt-x", "workflow_version": "v7"}') AS new_version;
SELECT state, version, result FROM idemgate.runs WHERE idempotency_key = 'runs-1';
-- A duplicate now returns the stored result, so the caller can answer with it.
SELECT outcome, state, version, result FROM idemgate.claim('runs-1', '{"invoice": 4471}');
-- completed → processing is illegal forever, even for the owner.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 1, 'processing')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 1, 'failed_terminal')$$);
-- The state change is audited with the model identity, not the result body.
SELECT kind, details FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'state_changed';

-- Transitions that belong to other functions are refused by CAS.
SELECT outcome FROM idemgate.claim('runs-3', '{"n": 3}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000003');
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'awaiting_human')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'approved')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'processing')$$);
SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'runs-3';

-- An expired lease: the old owner can no longer act, a new claim recovers it.
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'runs-3';
SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'completed') AS expired_owner;
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000003', 0, '1 minute') AS expired_renew;
SELECT outcome, state, lease_owner, version
  FROM idemgate.claim('runs-3', '{"n": 3}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000033');
SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'completed') AS old_owner_after_takeover;
SELECT kind, details->>'version' AS version, details->>'lease_owner' AS owner
  FROM idemgate.events WHERE idempotency_key = 'runs-3' AND kind = 'recovered';

-- Renewal: only the live owner, and never past idemgate.max_lease_life.
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '10 minutes') > now() + interval '9 minutes' AS renewed;
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000003', 1, '10 minutes') AS stranger_renew;
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 0, '10 minutes') AS stale_renew;
-- The lease was taken 45 minutes ago: with max_lease_life 1 hour, it may
-- reach now() + 15 minutes but no further.
UPDATE idemgate.runs SET lease_started_at = now() - interval '45 minutes' WHERE idempotency_key = 'runs-3';
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '20 minutes') AS past_max_life;
SELECT idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '12 minutes') - now() AS within_max_life;
SET idemgate.max_lease_life = '2min';
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('runs-4', '{}', '3 minutes')$$);
RESET idemgate.max_lease_life;

-- fail(): retryable until max_run_attempts, then terminal with a dead letter.
SET idemgate.max_run_attempts = 2;
SELECT outcome, version FROM idemgate.claim('runs-5', '{"to": "a@example.com"}', '5 minutes', 'mail', '00000000-0000-4000-8000-000000000005');
SELECT idemgate.fail('runs-5', '00000000-0000-4000-8000-0000000000ff', 0, 'timeout', 'model timed out', true) AS stranger_fail;
SELECT idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000005', 0, 'timeout', 'model timed out', true) AS first_failure;
-- A retryable run is recovered by the next delivery of the same event.
SELECT outcome, state, version FROM idemgate.claim('runs-5', '{"to": "a@example.com"}', '5 minutes', 'mail', '00000000-0000-4000-8000-000000000055');
SELECT idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000055', 2, 'timeout', 'model timed out again', true) AS second_failure;
SELECT state, failures, result FROM idemgate.runs WHERE idempotency_key = 'runs-5';
SELECT kind, idempotency_key, effect_id, payload, error_class, error, attempts, reinjected_at
  FROM idemgate.dead_letters WHERE idempotency_key = 'runs-5';
-- A terminal run is never claimed again.
SELECT outcome, state FROM idemgate.claim('runs-5', '{"to": "a@example.com"}');
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000055', 3, 'x', NULL, true)$$);
RESET idemgate.max_run_attempts;
-- Not retryable: terminal at once.
SELECT outcome FROM idemgate.claim('runs-6', '{"n": 6}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000006');
SELECT idemgate.fail('runs-6', '00000000-0000-4000-8000-000000000006', 0, 'validation', 'model output invalid after repair', false);
SELECT count(*) AS dead_letters FROM idemgate.dead_letters WHERE idempotency_key = 'runs-6';
-- CAS to failed_terminal dead-letters too.
SELECT outcome FROM idemgate.claim('runs-7', '{"n": 7}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000007');
SELECT idemgate.cas_transition('runs-7', '00000000-0000-4000-8000-000000000007', 0, 'failed_terminal', '{"error": "bad"}');
SELECT kind, payload, error_class, error FROM idemgate.dead_letters WHERE idempotency_key = 'runs-7';

-- claim_lease: the bare statement; rows only when claimed or recovered.
SELECT idempotency_key, lease_owner, version
  FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000008', '5 minutes');
SELECT count(*) AS busy FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000009', '5 minutes');
SELECT count(*) AS other_payload FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 9}'), '00000000-0000-4000-8000-000000000009', '5 minutes');
SELECT count(*) AS finished FROM idemgate.claim_lease('runs-1', idemgate.hash_payload('{"invoice": 4471}'), '00000000-0000-4000-8000-000000000009', '5 minutes');
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'runs-8';
SELECT idempotency_key, lease_owner, version
  FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000009', '5 minutes');

-- claim(jsonb): the n8n form.
SELECT outcome, idempotency_key, state, lease_owner, version
  FROM idemgate.claim('{"key": "runs-9", "payload": {"lead": 42}, "lease": "2 minutes", "workflow": "leads", "owner": "00000000-0000-4000-8000-000000000009"}');
SELECT outcome FROM idemgate.claim('{"key": "runs-9", "payload": {"lead": 42}}');
SELECT workflow, lease_expires_at - lease_started_at AS lease FROM idemgate.runs WHERE idempotency_key = 'runs-9';

-- supersede: the only replay of a finished key; the original never changes.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.supersede('runs-9', 'runs-9-fix', '{"lead": 43}', 'alice', 'wrong lead')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.supersede('runs-nope', 'runs-9-fix', '{"lead": 43}', 'alice', 'wrong lead')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.supersede('runs-1', 'runs-1', '{"lead": 43}', 'alice', 'same key')$$);
SELECT state, version, updated_at FROM idemgate.runs WHERE idempotency_key = 'runs-1' \gset orig_
SELECT outcome, idempotency_key, state, version
  FROM idemgate.supersede('runs-1', 'runs-1-v2', '{"invoice": 4471, "corrected": true}', 'alice', 'customer changed address');
SELECT idempotency_key, state, replaces_key, workflow FROM idemgate.runs WHERE idempotency_key IN ('runs-1', 'runs-1-v2') ORDER BY 1;
SELECT state = :'orig_state' AND version = :orig_version AND updated_at = :'orig_updated_at'
       AS original_unchanged FROM idemgate.runs WHERE idempotency_key = 'runs-1';
SELECT kind, actor, details FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'superseded';
-- Retrying the same supersede is a duplicate, not a second run.
SELECT outcome FROM idemgate.supersede('runs-1', 'runs-1-v2', '{"invoice": 4471, "corrected": true}', 'alice', 'customer changed address');
SELECT count(*) FROM idemgate.runs WHERE replaces_key = 'runs-1';

-- key_history shows the first claim and every event of a key.
SELECT kind FROM idemgate.key_history WHERE idempotency_key = 'runs-1' ORDER BY at, kind;
