-- Integrity rules that 1.0 kept with CHECK constraints on the hot tables
-- (runs.idempotency_key 1..512 bytes, runs.state, outbox.state) are kept by
-- the C code since 1.1 (sql/1.0--1.1/50_performance.sql: a CHECK costs
-- ~10 µs per write through SPI in PostgreSQL 15). This file shows that no
-- function lets a bad value in, and that rows written through every path
-- satisfy the rules.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;

-- The constraints are gone (so nothing but the C code guards the rules).
SELECT conrelid::regclass, conname FROM pg_constraint
 WHERE conrelid IN ('idemgate.runs'::regclass, 'idemgate.outbox'::regclass) AND contype = 'c'
 ORDER BY 1, 2;

-- Key length: 0 and 513 bytes are refused by every function that takes a
-- new key (also 171 three-byte characters + 2 = 515 bytes); 512 bytes (also
-- as 170 three-byte characters + 2) are accepted.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('', '{}')$$) AS empty_key,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$) AS long_key,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(repeat('€', 171) || 'xx', '{}')$$) AS long_multibyte_key,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(jsonb_build_object('key', repeat('k', 513), 'payload', '{}'::jsonb))$$) AS long_key_jsonb,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(jsonb_build_object('key', '', 'payload', '{}'::jsonb))$$) AS empty_key_jsonb,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_lease(repeat('k', 513), idemgate.hash_payload('{}'), gen_random_uuid(), '1 minute')$$) AS long_key_lease;
SELECT outcome FROM idemgate.claim(repeat('k', 512), '{}');
SELECT outcome FROM idemgate.claim(repeat('€', 170) || 'xx', '{}');
SELECT outcome FROM idemgate.claim('ir-orig', '{}');
SELECT idemgate.cas_transition('ir-orig', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'ir-orig'), 0, 'completed') IS NOT NULL AS completed;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.supersede('ir-orig', repeat('k', 513), '{}', 'op', 'fix')$$) AS long_new_key,
       pg_temp.sqlstate_of($$SELECT * FROM idemgate.supersede('ir-orig', '', '{}', 'op', 'fix')$$) AS empty_new_key;

-- Run state: an unknown state name is refused before anything is written.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'done')$$) AS bad_state,
       pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'Completed')$$) AS bad_case;

-- Drive runs and effects through every state the API can reach.
SELECT outcome FROM idemgate.claim('ir-fail', '{}');
SELECT idemgate.fail('ir-fail', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'ir-fail'), 0, 'x', 'boom', true);
SELECT outcome FROM idemgate.claim('ir-term', '{}');
SELECT idemgate.fail('ir-term', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'ir-term'), 0, 'x', 'boom', false);
SELECT outcome FROM idemgate.claim('ir-wait', '{}');
SELECT version FROM idemgate.request_approval('ir-wait', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'ir-wait'), 0,
       '{"type": "ir_mail", "target": "t", "payload": {}}');
SELECT outcome FROM idemgate.claim('ir-fx', '{}');
SELECT version FROM idemgate.enqueue_effect('ir-fx', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'ir-fx'), 0,
       '[{"type": "ir_mail", "target": "a", "payload": {}}, {"type": "ir_mail", "target": "b", "payload": {}},
         {"type": "ir_mail", "target": "c", "payload": {}}, {"type": "ir_mail", "target": "d", "payload": {}}]');
SELECT idemgate.set_actions_enabled(true, 'test', 'integrity rules');
CREATE TEMP TABLE claimed AS SELECT * FROM idemgate.claim_effects('ir_mail', 10);
SELECT count(*) AS claimed FROM claimed;
SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM claimed WHERE target = 'a';
SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport', 'refused') FROM claimed WHERE target = 'b';
SELECT idemgate.fail_effect(effect_id, lease_owner, 'server_error', '500') FROM claimed WHERE target = 'c';
SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', '400') FROM claimed WHERE target = 'd';
-- An unknown error class is refused: it would otherwise pick the new state.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'oops')$$) AS bad_class;

-- Every state reached is one of the allowed ones, and every key is 1..512 bytes.
SELECT state, count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'ir-%' OR idempotency_key IN (repeat('k', 512), repeat('€', 170) || 'xx')
 GROUP BY state ORDER BY state;
SELECT state, count(*) FROM idemgate.outbox WHERE effect_type = 'ir_mail' GROUP BY state ORDER BY state;
SELECT count(*) AS bad_runs FROM idemgate.runs
 WHERE state NOT IN ('processing', 'awaiting_human', 'approved', 'completed', 'failed_retryable', 'failed_terminal')
    OR octet_length(idempotency_key) NOT BETWEEN 1 AND 512;
SELECT count(*) AS bad_effects FROM idemgate.outbox
 WHERE state NOT IN ('pending', 'sending', 'completed', 'unknown', 'failed', 'cancelled');
SELECT max(octet_length(idempotency_key)) AS longest_key FROM idemgate.runs;
