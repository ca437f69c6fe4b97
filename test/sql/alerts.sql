-- The alerts view, watch_workflow and publish_alerts.
--
-- Like metrics.sql, the history is scripted in one transaction over empty
-- tables and rolled back (pgTAP and the test roles too): the dispatcher
-- (which calls publish_alerts every second) waits on our locks and never
-- sees it. now() is constant inside, so time is moved by UPDATEs instead
-- of sleeping. Messages are shown with the clock time masked as HH:MI; a
-- separate column checks that the time shown is since's. pgTAP: each
-- query's rows are compared as text (record output).
\i test/sql/include/quiet.psql
-- fail_all makes the pending effects of type t (only those of target
-- only_target when given) due, claims them and fails each with class err.
CREATE FUNCTION pg_temp.fail_all(t text, err text, only_target text DEFAULT NULL) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c record; n bigint := 0;
BEGIN
  UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second'
   WHERE effect_type = t AND state = 'pending' AND (only_target IS NULL OR target = only_target);
  FOR c IN SELECT * FROM idemgate.claim_effects(t, 1000, '1 minute') LOOP
    PERFORM idemgate.fail_effect(c.effect_id, c.lease_owner, err, 'scripted failure');
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
-- enqueue claims key k (workflow alerts-billing) and enqueues one effect of
-- type t per target, automatically; returns how many.
CREATE FUNCTION pg_temp.enqueue(k text, t text, targets text[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}', workflow => 'alerts-billing');
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', x, 'payload', '{}')) FROM unnest(targets) AS x));
  RETURN cardinality(e.effect_ids);
END $$;
-- claim_runs claims keys prefix1 .. prefixN of workflow alerts-leads;
-- returns how many.
CREATE FUNCTION pg_temp.claim_runs(prefix text, n integer) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (SELECT idemgate.claim(prefix || i, '{}', workflow => 'alerts-leads')
                          FROM generate_series(1, n) AS i) c
$$;
-- fail_runs fails runs prefix<first> .. prefix<last> for good (class model),
-- as their lease holder; returns their new states.
CREATE FUNCTION pg_temp.fail_runs(prefix text, first integer, last integer) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT idemgate.fail(r.idempotency_key, r.lease_owner, r.version, 'model', 'no draft', false)
    FROM generate_series(first, last) AS i JOIN idemgate.runs r ON r.idempotency_key = prefix || i
   ORDER BY i
$$;
-- rows_are(q, rows...): results_eq of SELECT q, each row compared as its
-- record text, described by q with its white space folded (cut to 100
-- characters).
CREATE FUNCTION pg_temp.rows_are(q text, VARIADIC expected text[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text := btrim(regexp_replace(q, '\s+', ' ', 'g'));
BEGIN
  RETURN results_eq('SELECT x::text FROM (SELECT ' || q || ') x',
                    'VALUES ' || (SELECT string_agg(format('(%L)', e), ', ' ORDER BY n)
                                    FROM unnest(expected) WITH ORDINALITY AS u(e, n)),
                    CASE WHEN length(d) > 100 THEN left(d, 97) || '...' ELSE d END);
END $$;
CREATE VIEW pg_temp.shown AS
SELECT alert, severity,
       regexp_replace(regexp_replace(message, '\d\d:\d\d', 'HH:MI'), '\d{4}-\d\d-\d\d ', 'YYYY-MM-DD ') AS message,
       count,
       message LIKE '%since ' || to_char(since, CASE WHEN since < now() - interval '1 day'
                                                    THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END) || '%' AS time_ok
  FROM idemgate.alerts ORDER BY alert, message;
\i test/sql/include/as_role.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
SET LOCAL timezone = 'UTC';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state;
-- Other files' IG001 refusals are counted in shared memory, not in a table.
SELECT idemgate.clear_payload_mismatches() \g /dev/null
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
SELECT * FROM no_plan();

-- The contract's columns.
SELECT pg_temp.rows_are($$attname, format_type(atttypid, atttypmod) FROM pg_attribute
                       WHERE attrelid = 'idemgate.alerts'::regclass AND attnum > 0 ORDER BY attnum$$,
                        '(alert,text)',
                        '(severity,text)',
                        '(message,text)',
                        '(count,bigint)',
                        '(since,"timestamp with time zone")');
SELECT is_empty($$SELECT * FROM idemgate.alerts$$,
                'no rows: * FROM idemgate.alerts');
SELECT pg_temp.rows_are($$idemgate.publish_alerts()$$, '(0)');

-- ---------------------------------------------------------------------
-- Silence. A workflow expected every 15 minutes fires the alert only after
-- more than 30 minutes without a claim, counted from when it was watched.
SELECT idemgate.watch_workflow('alerts-wf', '15 minutes') \g /dev/null
SELECT is_empty($$SELECT * FROM pg_temp.shown$$,
                'no rows: * FROM pg_temp.shown');

UPDATE idemgate.watched_workflows SET created_at = now() - interval '30 minutes';
SELECT is_empty($$SELECT * FROM pg_temp.shown$$,
                'no rows: * FROM pg_temp.shown');

UPDATE idemgate.watched_workflows SET created_at = now() - interval '31 minutes';
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(silence,critical,"workflow alerts-wf silent since HH:MI (expected every 15 min)",2,t)');

-- count is the number of intervals missed; since is when it went quiet.
SELECT pg_temp.rows_are($$count, since = now() - interval '31 minutes' AS since_ok FROM idemgate.alerts$$, '(2,t)');

-- A claim of the workflow clears it ...
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('alerts-1', '{}', workflow => 'alerts-wf')$$, '(claimed)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts$$, '(0)');

-- ... and silence is then counted from that claim.
UPDATE idemgate.runs SET created_at = now() - interval '2 hours' WHERE idempotency_key = 'alerts-1';
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(silence,critical,"workflow alerts-wf silent since HH:MI (expected every 15 min)",2,t)');

-- A duplicate delivery is a claim too: the trigger is alive.
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('alerts-1', '{}')$$, '(duplicate)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts$$, '(0)');

UPDATE idemgate.events SET at = now() - interval '40 minutes' WHERE idempotency_key = 'alerts-1';
-- A claim of another workflow does not count; a silence of days shows the date.
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('alerts-2', '{}', workflow => 'alerts-other')$$, '(claimed)');

SELECT idemgate.watch_workflow('alerts-nightly', '1 day') \g /dev/null
UPDATE idemgate.watched_workflows SET created_at = now() - interval '50 hours' WHERE workflow = 'alerts-nightly';
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(silence,critical,"workflow alerts-nightly silent since YYYY-MM-DD HH:MI (expected every 1 day)",2,t)',
                        '(silence,critical,"workflow alerts-wf silent since HH:MI (expected every 15 min)",2,t)');

-- Re-watching changes the interval but keeps the watch's start.
SELECT idemgate.watch_workflow('alerts-wf', '1 hour') \g /dev/null
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts WHERE message LIKE 'workflow alerts-wf %'$$, '(0)');

SELECT idemgate.watch_workflow('alerts-wf', '10 minutes') \g /dev/null
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE message LIKE 'workflow alerts-wf %'$$,
                        '(silence,critical,"workflow alerts-wf silent since HH:MI (expected every 10 min)",3,t)');
SELECT pg_temp.rows_are($$idemgate.unwatch_workflow('alerts-nightly'), idemgate.unwatch_workflow('alerts-nightly')$$, '(t,f)');
SELECT pg_temp.rows_are($$kind, actor IS NOT NULL AS has_actor, details FROM idemgate.events
                       WHERE kind IN ('workflow_watched', 'workflow_unwatched') ORDER BY id$$,
                        '(workflow_watched,t,"{""workflow"": ""alerts-wf"", ""expected_interval"": ""@ 15 mins""}")',
                        '(workflow_watched,t,"{""workflow"": ""alerts-nightly"", ""expected_interval"": ""@ 1 day""}")',
                        '(workflow_watched,t,"{""workflow"": ""alerts-wf"", ""expected_interval"": ""@ 1 hour""}")',
                        '(workflow_watched,t,"{""workflow"": ""alerts-wf"", ""expected_interval"": ""@ 10 mins""}")',
                        '(workflow_unwatched,t,"{""workflow"": ""alerts-nightly""}")');
SELECT pg_temp.rows_are($$idemgate.unwatch_workflow('alerts-wf')$$, '(t)');

-- ---------------------------------------------------------------------
-- Failure rate: more than idemgate.alert_failures (10) undelivered effects
-- of one type, or failed runs of one workflow, in 10 minutes.
SELECT is(current_setting('idemgate.alert_failures'), '10', 'idemgate.alert_failures is 10');
SELECT pg_temp.rows_are($$pg_temp.enqueue('alerts-fx', 'alerts_invoice', ARRAY(SELECT 'customer-' || i FROM generate_series(1, 10) AS i))$$,
                        '(10)');

-- Ten effects fail (to be retried): not more than the threshold.
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_invoice', 'transport')$$, '(10)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts$$, '(0)');

-- The eleventh fires one alert, however many attempts failed.
SELECT pg_temp.rows_are($$pg_temp.enqueue('alerts-fx11', 'alerts_invoice', ARRAY['customer-11'])$$, '(1)');
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_invoice', 'unavailable', 'customer-11')$$, '(1)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(failure_rate,critical,"11 effects of type alerts_invoice not delivered since HH:MI",11,t)');

-- A second failure of one of them: still 11 effects, still one alert.
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_invoice', 'unavailable', 'customer-3')$$, '(1)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(failure_rate,critical,"11 effects of type alerts_invoice not delivered since HH:MI",11,t)');

-- An effect delivered on retry is no longer "not delivered".
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second' WHERE target = 'customer-1';
SELECT pg_temp.rows_are($$idemgate.complete_effect(effect_id, lease_owner) FROM idemgate.claim_effects('alerts_invoice', 1)$$,
                        '(t)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts$$, '(0)');

-- Failures older than 10 minutes do not count either. (This round also
-- exhausts the attempts of customer-1 and customer-3: dead letters below.)
UPDATE idemgate.outbox SET state = 'pending' WHERE target = 'customer-1';
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_invoice', 'transport') AS failed_again$$, '(11)');
SELECT pg_temp.rows_are($$count(*) AS firing FROM idemgate.alerts$$, '(1)');

UPDATE idemgate.events SET at = now() - interval '11 minutes'
 WHERE kind = 'effect_failed' AND effect_id = (SELECT effect_id FROM idemgate.outbox WHERE target = 'customer-2');
SELECT pg_temp.rows_are($$count(*) AS firing FROM idemgate.alerts$$, '(0)');

-- Runs of a workflow that fail for good: eleven fire, ten do not. (Each
-- also fires terminal_failure at once: test/sql/alerts_runs.sql.)
SELECT pg_temp.rows_are($$pg_temp.claim_runs('alerts-run-', 11)$$, '(11)');
SELECT pg_temp.rows_are($$count(*) FROM pg_temp.fail_runs('alerts-run-', 1, 10)$$, '(10)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.alerts WHERE alert = 'failure_rate'$$, '(0)');
SELECT pg_temp.rows_are($$pg_temp.fail_runs('alerts-run-', 11, 11)$$, '(failed_terminal)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(failure_rate,critical,"11 runs of workflow alerts-leads failed since HH:MI",11,t)',
                        '(terminal_failure,warning,"11 runs of workflow alerts-leads failed for good since HH:MI (first: alerts-run-1, alerts-run-10, alerts-run-11; their inputs are in the dead letters: reinject or supersede)",11,t)');

-- ---------------------------------------------------------------------
-- Dead letters older than 1 hour (open ones), per workflow / effect type.
UPDATE idemgate.dead_letters SET dead_at = now() - interval '61 minutes'
 WHERE idempotency_key IN ('alerts-run-1', 'alerts-run-2', 'alerts-run-3');
UPDATE idemgate.dead_letters SET dead_at = now() - interval '59 minutes'
 WHERE idempotency_key IN ('alerts-run-4');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE alert = 'dead_letters'$$,
                        '(dead_letters,warning,"3 dead letters of workflow alerts-leads older than 1 hour since HH:MI",3,t)');
SELECT pg_temp.rows_are($$idemgate.reinject(id, 'alerts-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'alerts-run-1'$$,
                        '(t)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE alert = 'dead_letters'$$,
                        '(dead_letters,warning,"2 dead letters of workflow alerts-leads older than 1 hour since HH:MI",2,t)');

-- An effect rejected by the provider: a dead letter of its type.
SELECT pg_temp.rows_are($$pg_temp.enqueue('alerts-crm', 'alerts_crm_note', ARRAY['lead-9'])$$, '(1)');
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_crm_note', 'rejected')$$, '(1)');

UPDATE idemgate.dead_letters SET dead_at = '2020-01-01 01:55:00+00' WHERE effect_id IS NOT NULL;
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE alert = 'dead_letters'$$,
                        '(dead_letters,warning,"1 dead letter of type alerts_crm_note older than 1 hour since YYYY-MM-DD HH:MI",1,t)',
                        '(dead_letters,warning,"2 dead letters of type alerts_invoice older than 1 hour since YYYY-MM-DD HH:MI",2,t)',
                        '(dead_letters,warning,"2 dead letters of workflow alerts-leads older than 1 hour since HH:MI",2,t)');

-- ---------------------------------------------------------------------
-- Unknown effects: sent, outcome unknown.
SELECT pg_temp.rows_are($$pg_temp.enqueue('alerts-sms', 'alerts_sms', ARRAY['phone-1', 'phone-2'])$$, '(2)');
SELECT pg_temp.rows_are($$pg_temp.fail_all('alerts_sms', 'timeout_after_send')$$, '(2)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE alert = 'unknown_effects'$$,
                        '(unknown_effects,warning,"2 effects of type alerts_sms in doubt since HH:MI (maybe delivered: check with the provider, then resolve_effect)",2,t)');

-- ---------------------------------------------------------------------
-- publish_alerts: one notification per transition, never one per failure.
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(dead_letters,warning,"1 dead letter of type alerts_crm_note older than 1 hour since YYYY-MM-DD HH:MI",1,t)',
                        '(dead_letters,warning,"2 dead letters of type alerts_invoice older than 1 hour since YYYY-MM-DD HH:MI",2,t)',
                        '(dead_letters,warning,"2 dead letters of workflow alerts-leads older than 1 hour since HH:MI",2,t)',
                        '(failure_rate,critical,"11 runs of workflow alerts-leads failed since HH:MI",11,t)',
                        '(terminal_failure,warning,"8 runs of workflow alerts-leads failed for good since HH:MI (first: alerts-run-4, alerts-run-10, alerts-run-11; their inputs are in the dead letters: reinject or supersede)",8,t)',
                        -- 1.3: the run whose only effect the provider refused ended failed_terminal.
                        '(terminal_failure,warning,"run alerts-crm of workflow alerts-billing failed for good since HH:MI (rejected; its input is in the dead letter: reinject or supersede)",1,t)',
                        '(unknown_effects,warning,"2 effects of type alerts_sms in doubt since HH:MI (maybe delivered: check with the provider, then resolve_effect)",2,t)');
SELECT pg_temp.rows_are($$idemgate.publish_alerts() AS first, idemgate.publish_alerts() AS second$$, '(7,0)');
SELECT pg_temp.rows_are($$alert, subject, severity, count FROM idemgate.alert_state ORDER BY alert, subject$$,
                        '(dead_letters,effect_type:alerts_crm_note,warning,1)',
                        '(dead_letters,effect_type:alerts_invoice,warning,2)',
                        '(dead_letters,workflow:alerts-leads,warning,2)',
                        '(failure_rate,workflow:alerts-leads,critical,11)',
                        '(terminal_failure,workflow:alerts-billing,warning,1)',
                        '(terminal_failure,workflow:alerts-leads,warning,8)',
                        '(unknown_effects,effect_type:alerts_sms,warning,2)');

-- More failures of a firing alert: its count changes, no notification.
SELECT pg_temp.rows_are($$pg_temp.claim_runs('alerts-run-x', 2)$$, '(2)');
SELECT pg_temp.rows_are($$count(*) FROM pg_temp.fail_runs('alerts-run-x', 1, 2)$$, '(2)');
SELECT pg_temp.rows_are($$idemgate.publish_alerts()$$, '(0)');
SELECT pg_temp.rows_are($$count FROM idemgate.alert_state WHERE alert = 'failure_rate' AND subject = 'workflow:alerts-leads'$$,
                        '(13)');

-- One clears (the unknown sms are resolved), one starts (a silence): two.
SELECT pg_temp.rows_are($$idemgate.resolve_effect(effect_id, true, 'alerts-operator') FROM idemgate.outbox WHERE effect_type = 'alerts_sms'$$,
                        '(completed)',
                        '(completed)');

SELECT idemgate.watch_workflow('alerts-quiet', '1 minute') \g /dev/null
UPDATE idemgate.watched_workflows SET created_at = now() - interval '3 minutes';
SELECT pg_temp.rows_are($$idemgate.publish_alerts() AS transitions, idemgate.publish_alerts() AS again$$, '(2,0)');
SELECT pg_temp.rows_are($$alert, subject FROM idemgate.alert_state ORDER BY alert, subject$$,
                        '(dead_letters,effect_type:alerts_crm_note)',
                        '(dead_letters,effect_type:alerts_invoice)',
                        '(dead_letters,workflow:alerts-leads)',
                        '(failure_rate,workflow:alerts-leads)',
                        '(silence,workflow:alerts-quiet)',
                        '(terminal_failure,workflow:alerts-billing)',
                        '(terminal_failure,workflow:alerts-leads)');

-- Bad arguments.
SELECT throws_ok(q, code, m, a) FROM (VALUES
  ('null name', 'SELECT idemgate.watch_workflow(NULL, ''1 minute'')', '22004', 'argument "name" must not be NULL'),
  ('null interval', 'SELECT idemgate.watch_workflow(''w'', NULL)', '22004', 'argument "expected_interval" must not be NULL'),
  ('empty name', 'SELECT idemgate.watch_workflow('''', ''1 minute'')', '22023', 'argument "name" must be between 1 and 200 bytes long, not 0'),
  ('zero interval', 'SELECT idemgate.watch_workflow(''w'', ''0'')', '22023',
   'argument "expected_interval" must be greater than 0 s and at most 31622400 s'),
  ('negative interval', 'SELECT idemgate.watch_workflow(''w'', ''-1 minute'')', '22023',
   'argument "expected_interval" must be greater than 0 s and at most 31622400 s'),
  ('two years', 'SELECT idemgate.watch_workflow(''w'', ''2 years'')', '22023',
   'argument "expected_interval" must be greater than 0 s and at most 31622400 s'),
  ('unwatch null', 'SELECT idemgate.unwatch_workflow(NULL)', '22004', 'argument "name" must not be NULL')
) AS t(a, q, code, m);

-- Privileges: readers see alerts; only operators watch and publish.
CREATE ROLE alerts_reader;
CREATE ROLE alerts_client;
SELECT idemgate.grant_role('alerts_reader', 'reader') \g /dev/null
SELECT idemgate.grant_role('alerts_client', 'client') \g /dev/null
SELECT pg_temp.rows_are($$r, has_table_privilege(r, 'idemgate.alerts', 'SELECT') AS alerts,
                             has_table_privilege(r, 'idemgate.alert_instances', 'SELECT') AS instances,
                             has_table_privilege(r, 'idemgate.alert_state', 'SELECT') AS state,
                             has_function_privilege(r, 'idemgate.watch_workflow(text,interval)', 'EXECUTE') AS watch,
                             has_function_privilege(r, 'idemgate.publish_alerts()', 'EXECUTE') AS publish
                        FROM (VALUES ('alerts_reader'), ('alerts_client')) AS t(r)$$,
                        '(alerts_reader,t,f,f,f,f)',
                        '(alerts_client,f,f,f,f,f)');

SELECT is(pg_temp.as_role('alerts_reader', 'SELECT count(*) >= 0 FROM idemgate.alerts'), 'true', 'a reader reads alerts');
SELECT throws_ok($$SELECT pg_temp.as_role('alerts_reader', 'SELECT idemgate.publish_alerts()')$$, '42501',
                 'permission denied for function publish_alerts', 'a reader may not publish');
SELECT throws_ok($$SELECT pg_temp.as_role('alerts_client', 'SELECT count(*) FROM idemgate.alerts')$$, '42501',
                 'permission denied for view alerts', 'a client may not read alerts');
SELECT idemgate.revoke_role('alerts_reader', 'reader') \g /dev/null
SELECT idemgate.revoke_role('alerts_client', 'client') \g /dev/null
DROP ROLE alerts_reader;
DROP ROLE alerts_client;

SELECT * FROM finish();
ROLLBACK;
