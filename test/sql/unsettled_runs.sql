-- Approved runs whose effects are all settled (docs/outbox.md, "Completing
-- a run"): the safety net complete_settled_runs() completes them, the
-- dispatcher calls it every second, and the alert unsettled_runs names
-- them (workflow, first keys) when they last more than a minute. Such a
-- run cannot be made through the API any more (that is the point), so
-- the tests make it as the old race did: the effects' rows settled without
-- the run's completion check.
--
-- Part 1 is scripted in one transaction over empty tables and rolled back
-- (as alerts_runs.sql): now() is constant inside, so time is moved with
-- UPDATEs, and the dispatcher, which serves this database, never sees
-- these runs. Part 2 commits one such run and waits for the dispatcher.
-- pgTAP.
\i test/sql/include/quiet.psql
-- rows_are(q, rows...): results_eq of SELECT q, each row compared as its
-- record text, described by q with its white space folded.
CREATE FUNCTION pg_temp.rows_are(q text, VARIADIC expected text[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text := btrim(regexp_replace(q, '\s+', ' ', 'g'));
BEGIN
  RETURN results_eq('SELECT x::text FROM (SELECT ' || q || ') x',
                    'VALUES ' || (SELECT string_agg(format('(%L)', e), ', ' ORDER BY n)
                                    FROM unnest(expected) WITH ORDINALITY AS u(e, n)),
                    CASE WHEN length(d) > 100 THEN left(d, 97) || '...' ELSE d END);
END $$;
-- approved(k, wf, n): run k of workflow wf (NULL: none) claimed and
-- approved with n effects of type us_mail, targets t1..tn, all claimed
-- (sending); the run approved ago before now.
CREATE FUNCTION pg_temp.approved(k text, wf text, n int, ago interval DEFAULT '10 minutes') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}', '1 minute', wf);
  PERFORM idemgate.enqueue_effect(k, c.lease_owner, c.version,
            (SELECT jsonb_agg(jsonb_build_object('type', 'us_mail', 'target', 't' || i, 'payload', i))
               FROM generate_series(1, n) i));
  UPDATE idemgate.outbox SET state = 'sending', lease_owner = gen_random_uuid(), attempts = 1
   WHERE idempotency_key = k;
  UPDATE idemgate.runs SET updated_at = now() - ago WHERE idempotency_key = k;
END $$;
-- settle(k, target, state, ago): effect target of run k settled (completed
-- or cancelled) ago before now, as the old race left it: its run unchecked.
CREATE FUNCTION pg_temp.settle(k text, t text, s text, ago interval) RETURNS void LANGUAGE sql AS $$
  UPDATE idemgate.outbox SET state = s, provider_id = CASE WHEN s = 'completed' THEN 'p-' || t END,
         lease_owner = NULL, updated_at = now() - ago
   WHERE idempotency_key = k AND target = t
$$;
CREATE VIEW pg_temp.shown AS
SELECT alert, severity, regexp_replace(message, '\d\d:\d\d', 'HH:MI') AS message, count
  FROM idemgate.alerts
 WHERE alert = 'unsettled_runs'
 ORDER BY message;
\i test/sql/include/as_role.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
SET LOCAL timezone = 'UTC';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.alert_state;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
SELECT * FROM no_plan();

-- 1. Nothing approved: no alert, nothing to complete.
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'no alert without approved runs');
SELECT is(idemgate.complete_settled_runs(), 0, 'complete_settled_runs(): nothing to do');

-- Runs approved 10 minutes ago: one with its two effects completed 5
-- minutes ago (the old race), one with one completed and one cancelled,
-- one of another workflow, one with an open effect left (pending, unknown:
-- each keeps its run approved), one whose other effect failed (settled:
-- the run ends failed_terminal, 1.3), one settled only 30 seconds ago.
SELECT pg_temp.approved('us-a', 'invoices', 2) \g /dev/null
SELECT pg_temp.settle('us-a', 't1', 'completed', '6 minutes'), pg_temp.settle('us-a', 't2', 'completed', '5 minutes') \g /dev/null
SELECT pg_temp.approved('us-b', 'invoices', 2) \g /dev/null
SELECT pg_temp.settle('us-b', 't1', 'completed', '4 minutes'), pg_temp.settle('us-b', 't2', 'cancelled', '3 minutes') \g /dev/null
SELECT pg_temp.approved('us-c', NULL, 1) \g /dev/null
SELECT pg_temp.settle('us-c', 't1', 'completed', '2 minutes') \g /dev/null
SELECT pg_temp.approved('us-open-' || s, 'invoices', 2) FROM unnest('{pending,unknown,failed}'::text[]) s \g /dev/null
SELECT pg_temp.settle('us-open-' || s, 't1', 'completed', '5 minutes') FROM unnest('{pending,unknown,failed}'::text[]) s \g /dev/null
UPDATE idemgate.outbox SET state = substr(idempotency_key, 9), lease_owner = NULL
 WHERE idempotency_key LIKE 'us-open-%' AND target = 't2';
SELECT pg_temp.approved('us-new', 'invoices', 1) \g /dev/null
SELECT pg_temp.settle('us-new', 't1', 'completed', '30 seconds') \g /dev/null

-- 2. The alert: per workflow, the first keys (oldest settlement first),
-- since = the last effect's settlement; not the open ones, not the one
-- settled 30 seconds ago.
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
  '(unsettled_runs,warning,"2 runs of workflow invoices approved with all their effects settled since HH:MI (first: us-a, us-b; not completed: a dispatcher serving this database completes them; else call complete_settled_runs())",2)',
  '(unsettled_runs,warning,"run us-c without a workflow approved with all its effects settled since HH:MI (not completed: a dispatcher serving this database completes them; else call complete_settled_runs())",1)');
SELECT pg_temp.rows_are($$subject, keys, since = now() - interval '5 minutes' FROM idemgate.alert_instances
                          WHERE alert = 'unsettled_runs' ORDER BY subject$$,
                        '(no_workflow,{us-c},f)', '(workflow:invoices,"{us-a,us-b}",t)');
-- A minute after its last settlement, the newest one is named too.
UPDATE idemgate.outbox SET updated_at = now() - interval '61 seconds' WHERE idempotency_key = 'us-new';
SELECT pg_temp.rows_are($$count, keys FROM idemgate.alert_instances WHERE alert = 'unsettled_runs' AND subject = 'workflow:invoices'$$,
                        '(3,"{us-a,us-b,us-new}")');
-- Keys are cut to 64 characters, as in the other alerts about runs.
SELECT pg_temp.approved(repeat('k', 100), 'long', 1) \g /dev/null
SELECT pg_temp.settle(repeat('k', 100), 't1', 'completed', '2 minutes') \g /dev/null
SELECT pg_temp.rows_are($$char_length(keys[1]), right(keys[1], 3) FROM idemgate.alert_instances WHERE subject = 'workflow:long'$$,
                        '(64,...)');
-- publish_alerts announces it, and prometheus() names its keys.
SELECT ok(idemgate.publish_alerts() >= 3, 'publish_alerts announces the unsettled runs');
SELECT pg_temp.rows_are($$alert, subject, keys FROM idemgate.alert_state WHERE alert = 'unsettled_runs' ORDER BY subject$$,
                        '(unsettled_runs,no_workflow,{us-c})', '(unsettled_runs,workflow:invoices,"{us-a,us-b,us-new}")',
                        '(unsettled_runs,workflow:long,{kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...})');
SELECT ok(idemgate.prometheus() LIKE '%idemgate_alert_first_keys{alert="unsettled_runs",subject="workflow:invoices",keys="us-a, us-b, us-new"} 3%',
          'prometheus() names the first keys');

-- 3. The safety net, a walk of one run per call: it comes to every
-- approved run in turn and completes the settled ones, never the open
-- ones; after the last one it starts again from the first.
SELECT is((SELECT sum(idemgate.complete_settled_runs(1)) FROM generate_series(1, 8))::int, 6,
          'one run per call: a pass over the eight approved runs ends the six settled ones');
SELECT pg_temp.rows_are($$idempotency_key, state FROM idemgate.runs ORDER BY state, idempotency_key COLLATE "C"$$,
                        '(us-open-pending,approved)', '(us-open-unknown,approved)',
                        '(' || repeat('k', 100) || ',completed)', '(us-a,completed)', '(us-b,completed)',
                        '(us-c,completed)', '(us-new,completed)', '(us-open-failed,failed_terminal)');
-- A run approved before all of them, behind where the walk stands.
SELECT pg_temp.approved('us-0', 'invoices', 1, '20 minutes') \g /dev/null
SELECT pg_temp.settle('us-0', 't1', 'completed', '2 minutes') \g /dev/null
SELECT is((SELECT sum(idemgate.complete_settled_runs(1)) FROM generate_series(1, 5))::int, 1,
          'the walk starts again from the first approved run and completes the one behind it');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'us-0'), 'completed', 'us-0 completed');
-- A run completed by the safety net is as one completed by its last
-- effect: version + 1, its result lists its effects for later duplicates,
-- key_history shows the completion, and a duplicate claim gets the result.
SELECT pg_temp.rows_are($$version, result FROM idemgate.runs WHERE idempotency_key = 'us-b'$$,
  format('(2,"{""effects"": [{""state"": ""completed"", ""target"": ""t1"", ""effect_id"": ""%s"", ""effect_type"": ""us_mail"", ""provider_id"": ""p-t1""}, {""state"": ""cancelled"", ""target"": ""t2"", ""effect_id"": ""%s"", ""effect_type"": ""us_mail"", ""provider_id"": null}]}")',
         (SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'us-b' AND target = 't1'),
         (SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'us-b' AND target = 't2')));
SELECT pg_temp.rows_are($$kind, details->>'to' FROM idemgate.key_history WHERE idempotency_key = 'us-b' AND kind = 'state_changed'$$,
                        '(state_changed,completed)');
SELECT pg_temp.rows_are($$outcome, state, result->'effects'->0->>'target' FROM idemgate.claim('us-b', '{}')$$,
                        '(duplicate,completed,t1)');
-- The alert is gone with them; the open runs never fire it.
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'no alert once they are completed');
-- All at once (NULL): an operator's call looks at every approved run.
SELECT pg_temp.approved('us-d', 'invoices', 1) \g /dev/null
SELECT pg_temp.settle('us-d', 't1', 'completed', '2 minutes') \g /dev/null
SELECT is(idemgate.complete_settled_runs(), 1, 'complete_settled_runs() completes the one left');
SELECT is(idemgate.complete_settled_runs(), 0, 'and then there is none');
-- A run with no effect at all (nothing can make one) counts as settled.
UPDATE idemgate.runs SET state = 'approved', result = NULL WHERE idempotency_key = 'us-d';
DELETE FROM idemgate.outbox WHERE idempotency_key = 'us-d';
SELECT is(idemgate.complete_settled_runs(), 1, 'an approved run without effects is completed');
SELECT pg_temp.rows_are($$state, result FROM idemgate.runs WHERE idempotency_key = 'us-d'$$,
                        '(completed,"{""effects"": []}")');

-- 4. Bad input, and who may call it.
SELECT throws_ok($$SELECT idemgate.complete_settled_runs(0)$$, '22023',
                 'argument "max_runs" must be between 1 and 100000, not 0', 'max_runs 0');
SELECT throws_ok($$SELECT idemgate.complete_settled_runs(100001)$$, '22023',
                 'argument "max_runs" must be between 1 and 100000, not 100001', 'max_runs 100001');
SELECT throws_ok($$SELECT idemgate.complete_settled_runs(-1)$$, '22023',
                 'argument "max_runs" must be between 1 and 100000, not -1', 'max_runs -1');
CREATE ROLE us_client;
CREATE ROLE us_reader;
CREATE ROLE us_operator;
SELECT idemgate.grant_role('us_client', 'client'), idemgate.grant_role('us_reader', 'reader'),
       idemgate.grant_role('us_operator', 'operator') \g /dev/null
SELECT is(pg_temp.as_role('us_operator', 'SELECT idemgate.complete_settled_runs(10)'), '0', 'an operator may call it');
SELECT throws_ok($$SELECT pg_temp.as_role('us_client', 'SELECT idemgate.complete_settled_runs()')$$, '42501',
                 NULL, 'a client may not');
SELECT throws_ok($$SELECT pg_temp.as_role('us_reader', 'SELECT idemgate.complete_settled_runs()')$$, '42501',
                 NULL, 'a reader may not');
SELECT is_empty($$SELECT 1 FROM pg_proc p, aclexplode(p.proacl) a
                   WHERE p.oid = 'idemgate.complete_settled_runs(integer)'::regprocedure AND a.grantee = 0$$,
                'PUBLIC may not');

SELECT * FROM finish();
ROLLBACK;

-- 5. The dispatcher serving this database completes such a run by itself
-- (complete_settled_runs every second, the next 500 approved runs each
-- time), long before the alert's minute.
\set ECHO none
SET client_min_messages = warning;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET search_path = tap, public;
SELECT plan(2);
SELECT pg_temp.approved('us-committed', 'invoices', 2) \g /dev/null
SELECT pg_temp.settle('us-committed', 't1', 'completed', '1 second'), pg_temp.settle('us-committed', 't2', 'completed', '1 second') \g /dev/null
CREATE FUNCTION pg_temp.wait_completed(k text) RETURNS interval LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < t0 + interval '50 seconds' LOOP
    IF EXISTS (SELECT 1 FROM idemgate.runs WHERE idempotency_key = k AND state = 'completed') THEN
      RETURN clock_timestamp() - t0;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN NULL;
END $$;
SELECT ok(pg_temp.wait_completed('us-committed') < interval '50 seconds',
          'the dispatcher completed the committed run by itself');
SELECT is(jsonb_array_length((SELECT result->'effects' FROM idemgate.runs WHERE idempotency_key = 'us-committed')), 2,
          'with its two effects in its result');
SELECT * FROM finish();
DELETE FROM idemgate.outbox WHERE idempotency_key = 'us-committed';
DELETE FROM idemgate.events WHERE idempotency_key = 'us-committed';
DELETE FROM idemgate.runs WHERE idempotency_key = 'us-committed';
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
