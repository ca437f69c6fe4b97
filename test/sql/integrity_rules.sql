-- Integrity rules that 1.0 kept with CHECK constraints on the hot tables
-- (runs.idempotency_key 1..512 bytes, runs.state, outbox.state) are kept by
-- the C code since 1.1 (sql/1.0--1.1/50_performance.sql: a CHECK costs
-- ~10 µs per write through SPI in PostgreSQL 15). This file shows that no
-- function lets a bad value in, and that rows written through every path
-- satisfy the rules. pgTAP.
\set ECHO none
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idemgate;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET search_path = tap, public;
-- owner(k): the lease owner of run k (the caller that claimed it).
CREATE FUNCTION pg_temp.owner(k text) RETURNS uuid LANGUAGE sql AS $$
  SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k
$$;
SELECT * FROM no_plan();

-- The constraints are gone (so nothing but the C code guards the rules).
SELECT is_empty($$SELECT conrelid::regclass, conname FROM pg_constraint
                   WHERE conrelid IN ('idemgate.runs'::regclass, 'idemgate.outbox'::regclass) AND contype = 'c'$$,
                'no CHECK constraint on runs or outbox');

-- Key length: 0 and 513 bytes are refused by every function that takes a
-- new key (also 171 three-byte characters + 2 = 515 bytes); 512 bytes (also
-- as 170 three-byte characters + 2) are accepted.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim('', '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.claim(repeat('€', 171) || 'xx', '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 515'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', repeat('k', 513), 'payload', '{}'::jsonb))$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', '', 'payload', '{}'::jsonb))$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim_lease(repeat('k', 513), idemgate.hash_payload('{}'), gen_random_uuid(), '1 minute')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513')
) AS t(q, code, m);
SELECT is((SELECT outcome FROM idemgate.claim(repeat('k', 512), '{}')), 'claimed', '512 bytes: claimed');
SELECT is((SELECT outcome FROM idemgate.claim(repeat('€', 170) || 'xx', '{}')), 'claimed', '512 bytes in three-byte characters: claimed');
SELECT is((SELECT outcome FROM idemgate.claim('ir-orig', '{}')), 'claimed', 'ir-orig claimed');
SELECT ok(idemgate.cas_transition('ir-orig', pg_temp.owner('ir-orig'), 0, 'completed') IS NOT NULL,
          'ir-orig completed');
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT * FROM idemgate.supersede('ir-orig', repeat('k', 513), '{}', 'op', 'fix')$$, '22023', 'argument "new_key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.supersede('ir-orig', '', '{}', 'op', 'fix')$$, '22023', 'argument "new_key" must be between 1 and 512 bytes long, not 0')
) AS t(q, code, m);

-- Run state: an unknown state name is refused before anything is written.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'done')$$, '22023', 'argument "new_state" must be a run state, not "done"'),
  ($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'Completed')$$, '22023', 'argument "new_state" must be a run state, not "Completed"')
) AS t(q, code, m);

-- Drive runs and effects through every state the API can reach.
SELECT is((SELECT outcome FROM idemgate.claim('ir-fail', '{}')), 'claimed', 'ir-fail claimed');
SELECT is(idemgate.fail('ir-fail', pg_temp.owner('ir-fail'), 0, 'x', 'boom', true),
          'failed_retryable', 'a retryable failure');
SELECT is((SELECT outcome FROM idemgate.claim('ir-term', '{}')), 'claimed', 'ir-term claimed');
SELECT is(idemgate.fail('ir-term', pg_temp.owner('ir-term'), 0, 'x', 'boom', false),
          'failed_terminal', 'a terminal failure');
SELECT is((SELECT outcome FROM idemgate.claim('ir-wait', '{}')), 'claimed', 'ir-wait claimed');
SELECT is((SELECT version FROM idemgate.request_approval('ir-wait', pg_temp.owner('ir-wait'), 0,
          '{"type": "ir_mail", "target": "t", "payload": {}}')), 1::bigint, 'approval requested');
SELECT is((SELECT outcome FROM idemgate.claim('ir-fx', '{}')), 'claimed', 'ir-fx claimed');
SELECT is((SELECT version FROM idemgate.enqueue_effect('ir-fx', pg_temp.owner('ir-fx'), 0,
       '[{"type": "ir_mail", "target": "a", "payload": {}}, {"type": "ir_mail", "target": "b", "payload": {}},
         {"type": "ir_mail", "target": "c", "payload": {}}, {"type": "ir_mail", "target": "d", "payload": {}}]')), 1::bigint,
          'four effects enqueued');
SELECT idemgate.set_actions_enabled(true, 'test', 'integrity rules') \g /dev/null
CREATE TEMP TABLE claimed AS SELECT * FROM idemgate.claim_effects('ir_mail', 10);
SELECT is((SELECT count(*) FROM claimed), 4::bigint, 'four claimed');
SELECT is((SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM claimed WHERE target = 'a'), true, 'a completed');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport', 'refused') FROM claimed WHERE target = 'b'), 'pending', 'b: transport, pending');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'server_error', '500') FROM claimed WHERE target = 'c'), 'unknown', 'c: server_error, unknown');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', '400') FROM claimed WHERE target = 'd'), 'failed', 'd: rejected, failed');
-- An unknown error class is refused: it would otherwise pick the new state.
SELECT throws_ok($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'oops')$$, '22023', 'argument "error_class" must be a known error class, not "oops"',
                 'an unknown error class');

-- Every state reached is one of the allowed ones, and every key is 1..512 bytes.
SELECT results_eq($$SELECT state, count(*) FROM idemgate.runs
                     WHERE idempotency_key LIKE 'ir-%' OR idempotency_key IN (repeat('k', 512), repeat('€', 170) || 'xx')
                     GROUP BY state ORDER BY state$$,
                  $$VALUES ('approved', 1::bigint), ('awaiting_human', 1), ('completed', 1), ('failed_retryable', 1),
                           ('failed_terminal', 1), ('processing', 2)$$,
                  'runs in every state the API reaches');
SELECT results_eq($$SELECT state, count(*) FROM idemgate.outbox WHERE effect_type = 'ir_mail' GROUP BY state ORDER BY state$$,
                  $$VALUES ('completed', 1::bigint), ('failed', 1), ('pending', 1), ('unknown', 1)$$,
                  'effects in every state the API reaches');
SELECT is_empty($$SELECT idempotency_key, state FROM idemgate.runs
                   WHERE state NOT IN ('processing', 'awaiting_human', 'approved', 'completed', 'failed_retryable', 'failed_terminal')
                      OR octet_length(idempotency_key) NOT BETWEEN 1 AND 512$$,
                'no run with a bad state or key length');
SELECT is_empty($$SELECT effect_id, state FROM idemgate.outbox
                   WHERE state NOT IN ('pending', 'sending', 'completed', 'unknown', 'failed', 'cancelled')$$,
                'no effect with a bad state');
SELECT is((SELECT max(octet_length(idempotency_key)) FROM idemgate.runs), 512, 'the longest key is 512 bytes');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
