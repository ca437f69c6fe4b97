-- Validation is enforced, repair is bounded (src/ledger/record_validation.c,
-- docs/operations.md "Validating model output"): while a run's latest
-- record_validation is invalid, enqueue_effect and request_approval refuse
-- with IG004 and nothing is written; a valid one lets them through; the
-- idemgate.max_repairs + 1-th invalid validation (default 2: the third)
-- ends the run failed_terminal with an invalid_output dead letter and the
-- terminal_failure alert.
\i test/sql/include/quiet.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.alert_state;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
CREATE FUNCTION pg_temp.owner_of(k text) RETURNS uuid LANGUAGE sql AS
$$ SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k $$;
CREATE FUNCTION pg_temp.version_of(k text) RETURNS bigint LANGUAGE sql AS
$$ SELECT version FROM idemgate.runs WHERE idempotency_key = k $$;
-- validate records a validation of output o against a schema needing "to".
CREATE FUNCTION pg_temp.validate(k text, o jsonb) RETURNS boolean LANGUAGE sql AS $$
  SELECT valid FROM idemgate.record_validation(k, pg_temp.owner_of(k), pg_temp.version_of(k), o,
           '{"type": "object", "required": ["to"]}')
$$;
SELECT * FROM no_plan();

SELECT is((SELECT outcome FROM idemgate.claim('ve-1', '{"n": 1}', workflow => 've-wf')), 'claimed', 'claimed');
SELECT is(pg_temp.validate('ve-1', '{"body": "no recipient"}'), false, 'first output invalid');
SELECT throws_ok($$SELECT idemgate.enqueue_effect('ve-1', pg_temp.owner_of('ve-1'), pg_temp.version_of('ve-1'),
                     '{"type": "ve_mail", "target": "x", "payload": {}}')$$,
                 'IG004', 'output of run "ve-1" failed validation', 'enqueue_effect refuses: IG004');
SELECT throws_ok($$SELECT idemgate.request_approval('ve-1', pg_temp.owner_of('ve-1'), pg_temp.version_of('ve-1'),
                     '{"type": "ve_mail", "target": "x", "payload": {}}')$$,
                 'IG004', NULL, 'request_approval refuses: IG004');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 've-1'), 'processing', 'the run is still processing');
SELECT is((SELECT count(*) FROM idemgate.outbox), 0::bigint, 'nothing enqueued');
SELECT is((SELECT count(*) FROM idemgate.approvals), 0::bigint, 'no approval requested');
-- A repair: valid now, the effect goes.
SELECT is(pg_temp.validate('ve-1', '{"to": "ana"}'), true, 'the repaired output is valid');
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('ve-1', pg_temp.owner_of('ve-1'), pg_temp.version_of('ve-1'),
             '{"type": "ve_mail", "target": "x", "payload": {}}')), 1, 'then enqueue_effect goes through');

-- Three invalid outputs in a row: the run fails for good.
SELECT is((SELECT outcome FROM idemgate.claim('ve-2', '{"n": 2}', workflow => 've-wf')), 'claimed', 'claimed');
SELECT is(pg_temp.validate('ve-2', '{}'), false, 'invalid 1');
SELECT is(pg_temp.validate('ve-2', '{}'), false, 'invalid 2 (first repair failed)');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 've-2'), 'processing', 'after two, still repairable');
SELECT is(pg_temp.validate('ve-2', '{}'), false, 'invalid 3 (second repair failed)');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 've-2'), 'failed_terminal',
          'with idemgate.max_repairs = 2 the third invalid output ends the run');
SELECT is((SELECT kind || ' ' || error_class || ' ' || attempts FROM idemgate.dead_letters WHERE idempotency_key = 've-2'),
          'run invalid_output 3', 'a run dead letter of class invalid_output');
SELECT is((SELECT count(*) FROM idemgate.alerts WHERE alert = 'terminal_failure' AND message LIKE '%ve-2%invalid_output%'), 1::bigint,
          'terminal_failure fires at once, naming the key and the class');
SELECT throws_ok($$SELECT idemgate.enqueue_effect('ve-2', NULL::uuid, 0, '{"type": "ve_mail", "target": "x", "payload": {}}')$$,
                 '22004', NULL, 'no owner: 22004');
SELECT is((SELECT count(*) FROM idemgate.enqueue_effect('ve-2', '00000000-0000-4000-8000-000000000001', 3,
             '{"type": "ve_mail", "target": "x", "payload": {}}') e WHERE e.effect_ids IS NOT NULL), 0::bigint,
          'a failed run enqueues nothing');
-- Reinjecting the dead letter gives the run (and its output) a fresh start.
SELECT is((SELECT idemgate.reinject(id, 've-operator') FROM idemgate.dead_letters WHERE idempotency_key = 've-2'), true,
          'reinjected');
SELECT is((SELECT state || ' ' || output_invalid || ' ' || invalid_outputs FROM idemgate.runs WHERE idempotency_key = 've-2'),
          'failed_retryable false 0', 'failed_retryable, its verdicts forgotten');

SELECT * FROM finish();
ROLLBACK;
