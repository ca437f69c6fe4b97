-- Run ledger: claim outcomes, leases, CAS, renew, fail, supersede. pgTAP.
\i test/sql/include/pgtap.psql
SELECT * FROM no_plan();

-- A webhook delivered twice: the first call claims, the second is a duplicate
-- that sees the stored state and no owner.
SELECT results_eq($$SELECT outcome, idempotency_key, state, lease_owner, version, result
                      FROM idemgate.claim('runs-1', '{"invoice": 4471}', '5 minutes', 'billing',
                                          '00000000-0000-4000-8000-000000000001')$$,
                  $$VALUES ('claimed', 'runs-1', 'processing', '00000000-0000-4000-8000-000000000001'::uuid, 0::bigint, NULL::jsonb)$$,
                  'first delivery: claimed, with the given owner');
SELECT results_eq($$SELECT outcome, state, lease_owner IS NULL, version FROM idemgate.claim('runs-1', '{"invoice": 4471}')$$,
                  $$VALUES ('duplicate', 'processing', true, 0::bigint)$$, 'second delivery: duplicate, no owner');
-- The same payload with keys in another order is the same payload.
SELECT is((SELECT outcome FROM idemgate.claim('runs-1', '{ "invoice" : 4471 }')), 'duplicate', 'the same payload written differently');
-- A changed payload under the same key is refused: IG001, nothing written.
SELECT throws_ok($$SELECT * FROM idemgate.claim('runs-1', '{"invoice": 4472}')$$,
                 'IG001', 'idempotency key "runs-1" was already used with a different payload', 'another payload: IG001');
SELECT is((SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'duplicate'), 2::bigint,
          'two duplicate events, none for the refused call');

-- The stored hash is SHA-256 of the canonical jsonb text, as hash_payload says.
SELECT results_eq($$SELECT payload_hash = idemgate.hash_payload('{"invoice": 4471}'),
                           payload_hash = sha256(convert_to('{"invoice": 4471}'::jsonb::text, 'UTF8')),
                           payload = '{"invoice": 4471}', workflow
                      FROM idemgate.runs WHERE idempotency_key = 'runs-1'$$,
                  $$VALUES (true, true, true, 'billing')$$, 'payload_hash is SHA-256 of the canonical text; payload and workflow stored');

-- A fresh owner is generated when none is given, and is random.
SELECT ok((SELECT a.lease_owner IS NOT NULL AND b.lease_owner IS NOT NULL AND a.lease_owner <> b.lease_owner
             FROM idemgate.claim('runs-2a', '{}') a, idemgate.claim('runs-2b', '{}') b), 'generated owners differ');

-- CAS: only the live owner at the current version moves the run.
SELECT is(idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-0000000000ff', 0, 'completed'), NULL, 'a stranger: NULL');
SELECT is(idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 7, 'completed'), NULL, 'a stale version: NULL');
SELECT is(idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 0, 'completed',
                                  '{"message_id": "m-1", "model": "gpt-x", "workflow_version": "v7"}'), 1::bigint,
          'the owner: the new version');
SELECT results_eq($$SELECT state, version, result FROM idemgate.runs WHERE idempotency_key = 'runs-1'$$,
                  $$VALUES ('completed', 1::bigint, '{"model": "gpt-x", "message_id": "m-1", "workflow_version": "v7"}'::jsonb)$$,
                  'completed with its result');
-- A duplicate now returns the stored result, so the caller can answer with it.
SELECT results_eq($$SELECT outcome, state, version, result FROM idemgate.claim('runs-1', '{"invoice": 4471}')$$,
                  $$VALUES ('duplicate', 'completed', 1::bigint, '{"model": "gpt-x", "message_id": "m-1", "workflow_version": "v7"}'::jsonb)$$,
                  'a duplicate gets the stored result');
-- completed → processing is illegal forever, even for the owner.
SELECT throws_ok($$SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 1, 'processing')$$,
                 'IG002', 'illegal transition of run "runs-1" from completed to processing', 'completed → processing: IG002');
SELECT throws_ok($$SELECT idemgate.cas_transition('runs-1', '00000000-0000-4000-8000-000000000001', 1, 'failed_terminal')$$,
                 'IG002', 'illegal transition of run "runs-1" from completed to failed_terminal', 'completed → failed_terminal: IG002');
-- The state change is audited with the model identity, not the result body.
-- (processing_ms, the time since the claim, is checked in run_metrics.sql.)
SELECT results_eq($$SELECT kind, details - 'processing_ms' FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'state_changed'$$,
                  $$VALUES ('state_changed', '{"to": "completed", "from": "processing", "model": "gpt-x", "version": 1, "workflow": "billing", "workflow_version": "v7"}'::jsonb)$$,
                  'the state change is audited with the model identity');

-- Transitions that belong to other functions are refused by CAS.
SELECT is((SELECT outcome FROM idemgate.claim('runs-3', '{"n": 3}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000003')),
          'claimed', 'runs-3 claimed');
SELECT throws_ok(format($$SELECT idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, %L)$$, s),
                 'IG002', format('illegal transition of run "runs-3" from processing to %s', s), 'CAS to ' || s || ': IG002')
  FROM unnest(ARRAY['awaiting_human', 'approved', 'processing']) AS s;
SELECT results_eq($$SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'runs-3'$$,
                  $$VALUES ('processing', 0::bigint)$$, 'runs-3 unchanged');

-- An expired lease: the old owner can no longer act, a new claim recovers it.
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'runs-3';
SELECT is(idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'completed'), NULL, 'an expired owner: NULL');
SELECT is(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000003', 0, '1 minute'), NULL, 'an expired owner cannot renew');
SELECT results_eq($$SELECT outcome, state, lease_owner, version
                      FROM idemgate.claim('runs-3', '{"n": 3}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000033')$$,
                  $$VALUES ('recovered', 'processing', '00000000-0000-4000-8000-000000000033'::uuid, 1::bigint)$$,
                  'a new claim recovers it');
SELECT is(idemgate.cas_transition('runs-3', '00000000-0000-4000-8000-000000000003', 0, 'completed'), NULL,
          'the old owner after the takeover: NULL');
SELECT results_eq($$SELECT kind, details->>'version', details->>'lease_owner'
                      FROM idemgate.events WHERE idempotency_key = 'runs-3' AND kind = 'recovered'$$,
                  $$VALUES ('recovered', '1', '00000000-0000-4000-8000-000000000033')$$, 'the takeover is audited');

-- Renewal: only the live owner, and never past idemgate.max_lease_life.
SELECT ok(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '10 minutes') > now() + interval '9 minutes',
          'the owner renews');
SELECT is(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000003', 1, '10 minutes'), NULL, 'a stranger cannot renew');
SELECT is(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 0, '10 minutes'), NULL, 'a stale version cannot renew');
-- The lease was taken 45 minutes ago: with max_lease_life 1 hour, it may
-- reach now() + 15 minutes but no further.
UPDATE idemgate.runs SET lease_started_at = now() - interval '45 minutes' WHERE idempotency_key = 'runs-3';
SELECT is(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '20 minutes'), NULL,
          'past max_lease_life: NULL');
SELECT is(idemgate.renew_lease('runs-3', '00000000-0000-4000-8000-000000000033', 1, '12 minutes') - now(), interval '12 minutes',
          'within max_lease_life: renewed');
SET idemgate.max_lease_life = '2min';
SELECT throws_ok($$SELECT * FROM idemgate.claim('runs-4', '{}', '3 minutes')$$,
                 '22023', 'argument "lease" must be greater than 0 s and at most 120 s', 'a lease longer than max_lease_life');
RESET idemgate.max_lease_life;

-- fail(): retryable until max_run_attempts, then terminal with a dead letter.
SET idemgate.max_run_attempts = 2;
SELECT results_eq($$SELECT outcome, version FROM idemgate.claim('runs-5', '{"to": "a@example.com"}', '5 minutes', 'mail', '00000000-0000-4000-8000-000000000005')$$,
                  $$VALUES ('claimed', 0::bigint)$$, 'runs-5 claimed');
SELECT is(idemgate.fail('runs-5', '00000000-0000-4000-8000-0000000000ff', 0, 'timeout', 'model timed out', true), NULL, 'a stranger cannot fail it');
SELECT is(idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000005', 0, 'timeout', 'model timed out', true), 'failed_retryable',
          'first failure: retryable');
-- A retryable run is recovered by the next delivery of the same event.
SELECT results_eq($$SELECT outcome, state, version FROM idemgate.claim('runs-5', '{"to": "a@example.com"}', '5 minutes', 'mail', '00000000-0000-4000-8000-000000000055')$$,
                  $$VALUES ('recovered', 'processing', 2::bigint)$$, 'the next delivery recovers it');
SELECT is(idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000055', 2, 'timeout', 'model timed out again', true), 'failed_terminal',
          'second failure with max_run_attempts 2: terminal');
SELECT results_eq($$SELECT state, failures, result FROM idemgate.runs WHERE idempotency_key = 'runs-5'$$,
                  $$VALUES ('failed_terminal', 2, '{"error": "model timed out again", "failures": 2, "error_class": "timeout"}'::jsonb)$$,
                  'the run keeps its failures and last error');
SELECT results_eq($$SELECT kind, idempotency_key, effect_id, payload, error_class, error, attempts, reinjected_at
                      FROM idemgate.dead_letters WHERE idempotency_key = 'runs-5'$$,
                  $$VALUES ('run', 'runs-5', NULL::uuid, '{"to": "a@example.com"}'::jsonb, 'timeout', 'model timed out again', 2, NULL::timestamptz)$$,
                  'a run dead letter with the full payload');
-- A terminal run is never claimed again.
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim('runs-5', '{"to": "a@example.com"}')$$,
                  $$VALUES ('duplicate', 'failed_terminal')$$, 'a terminal run is a duplicate');
SELECT throws_ok($$SELECT idemgate.fail('runs-5', '00000000-0000-4000-8000-000000000055', 3, 'x', NULL, true)$$,
                 'IG002', 'illegal transition of run "runs-5" from failed_terminal to failed_retryable', 'failing a terminal run: IG002');
RESET idemgate.max_run_attempts;
-- Not retryable: terminal at once.
SELECT is((SELECT outcome FROM idemgate.claim('runs-6', '{"n": 6}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000006')),
          'claimed', 'runs-6 claimed');
SELECT is(idemgate.fail('runs-6', '00000000-0000-4000-8000-000000000006', 0, 'validation', 'model output invalid after repair', false),
          'failed_terminal', 'not retryable: terminal at once');
SELECT is((SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key = 'runs-6'), 1::bigint, 'with a dead letter');
-- CAS to failed_terminal dead-letters too.
SELECT is((SELECT outcome FROM idemgate.claim('runs-7', '{"n": 7}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000007')),
          'claimed', 'runs-7 claimed');
SELECT is(idemgate.cas_transition('runs-7', '00000000-0000-4000-8000-000000000007', 0, 'failed_terminal', '{"error": "bad"}'),
          1::bigint, 'CAS to failed_terminal');
SELECT results_eq($$SELECT kind, payload, error_class, error FROM idemgate.dead_letters WHERE idempotency_key = 'runs-7'$$,
                  $$VALUES ('run', '{"n": 7}'::jsonb, 'terminal', '{"error": "bad"}')$$, 'dead-letters too');

-- claim_lease: the bare statement; rows only when claimed or recovered.
SELECT results_eq($$SELECT idempotency_key, lease_owner, version
                      FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000008', '5 minutes')$$,
                  $$VALUES ('runs-8', '00000000-0000-4000-8000-000000000008'::uuid, 0::bigint)$$, 'claim_lease: claimed');
SELECT is_empty($$SELECT * FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000009', '5 minutes')$$,
                'claim_lease: busy → no row');
SELECT is_empty($$SELECT * FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 9}'), '00000000-0000-4000-8000-000000000009', '5 minutes')$$,
                'claim_lease: another payload → no row');
SELECT is_empty($$SELECT * FROM idemgate.claim_lease('runs-1', idemgate.hash_payload('{"invoice": 4471}'), '00000000-0000-4000-8000-000000000009', '5 minutes')$$,
                'claim_lease: finished → no row');
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'runs-8';
SELECT results_eq($$SELECT idempotency_key, lease_owner, version
                      FROM idemgate.claim_lease('runs-8', idemgate.hash_payload('{"n": 8}'), '00000000-0000-4000-8000-000000000009', '5 minutes')$$,
                  $$VALUES ('runs-8', '00000000-0000-4000-8000-000000000009'::uuid, 1::bigint)$$, 'claim_lease: recovered');

-- claim(jsonb): the n8n form.
SELECT results_eq($$SELECT outcome, idempotency_key, state, lease_owner, version
                      FROM idemgate.claim('{"key": "runs-9", "payload": {"lead": 42}, "lease": "2 minutes", "workflow": "leads", "owner": "00000000-0000-4000-8000-000000000009"}')$$,
                  $$VALUES ('claimed', 'runs-9', 'processing', '00000000-0000-4000-8000-000000000009'::uuid, 0::bigint)$$,
                  'claim(jsonb): claimed');
SELECT is((SELECT outcome FROM idemgate.claim('{"key": "runs-9", "payload": {"lead": 42}}')), 'duplicate', 'claim(jsonb): duplicate');
SELECT results_eq($$SELECT workflow, lease_expires_at - lease_started_at FROM idemgate.runs WHERE idempotency_key = 'runs-9'$$,
                  $$VALUES ('leads', interval '2 minutes')$$, 'claim(jsonb): workflow and lease kept');

-- supersede: the only replay of a finished key; the original never changes.
SELECT throws_ok(q, code, m, d) FROM (VALUES
  ($$SELECT * FROM idemgate.supersede('runs-9', 'runs-9-fix', '{"lead": 43}', 'alice', 'wrong lead')$$, 'IG002',
   'run "runs-9" is processing; only completed or failed_terminal runs can be superseded', 'supersede a processing run: IG002'),
  ($$SELECT * FROM idemgate.supersede('runs-nope', 'runs-9-fix', '{"lead": 43}', 'alice', 'wrong lead')$$, 'IG003',
   'run "runs-nope" does not exist', 'supersede an unknown run: IG003'),
  ($$SELECT * FROM idemgate.supersede('runs-1', 'runs-1', '{"lead": 43}', 'alice', 'same key')$$, '22023',
   'argument "new_key" must differ from "original_key"', 'supersede with the same key: 22023')
) AS t(q, code, m, d);
SELECT state, version, updated_at FROM idemgate.runs WHERE idempotency_key = 'runs-1' \gset orig_
SELECT results_eq($$SELECT outcome, idempotency_key, state, version
                      FROM idemgate.supersede('runs-1', 'runs-1-v2', '{"invoice": 4471, "corrected": true}', 'alice', 'customer changed address')$$,
                  $$VALUES ('claimed', 'runs-1-v2', 'processing', 0::bigint)$$, 'supersede: a new run is claimed');
SELECT results_eq($$SELECT idempotency_key, state, replaces_key, workflow FROM idemgate.runs WHERE idempotency_key IN ('runs-1', 'runs-1-v2') ORDER BY 1$$,
                  $$VALUES ('runs-1', 'completed', NULL::text, 'billing'), ('runs-1-v2', 'processing', 'runs-1', 'billing')$$,
                  'linked to the original, same workflow');
SELECT ok(state = :'orig_state' AND version = :orig_version AND updated_at = :'orig_updated_at', 'the original is unchanged')
  FROM idemgate.runs WHERE idempotency_key = 'runs-1';
SELECT results_eq($$SELECT kind, actor, details FROM idemgate.events WHERE idempotency_key = 'runs-1' AND kind = 'superseded'$$,
                  $$VALUES ('superseded', 'alice', '{"reason": "customer changed address", "new_key": "runs-1-v2", "original_state": "completed"}'::jsonb)$$,
                  'supersede is audited');
-- Retrying the same supersede is a duplicate, not a second run.
SELECT is((SELECT outcome FROM idemgate.supersede('runs-1', 'runs-1-v2', '{"invoice": 4471, "corrected": true}', 'alice', 'customer changed address')),
          'duplicate', 'the same supersede again: duplicate');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE replaces_key = 'runs-1'), 1::bigint, 'one replacement');

-- key_history shows the first claim and every event of a key.
SELECT results_eq($$SELECT kind FROM idemgate.key_history WHERE idempotency_key = 'runs-1' ORDER BY at, kind$$,
                  $$VALUES ('claimed'), ('duplicate'), ('duplicate'), ('state_changed'), ('duplicate'), ('superseded')$$,
                  'key_history: the first claim and every event');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
