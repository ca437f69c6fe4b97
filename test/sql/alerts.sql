-- The alerts view, watch_workflow and publish_alerts.
--
-- Like metrics.sql, the history is scripted in one transaction over empty
-- tables and rolled back: the dispatcher (which calls publish_alerts every
-- second) waits on our locks and never sees it. now() is constant inside,
-- so time is moved by UPDATEs instead of sleeping. Messages are shown with
-- the clock time masked as HH:MI; a separate column checks that the time
-- shown is since's.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
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
CREATE VIEW pg_temp.shown AS
SELECT alert, severity,
       regexp_replace(regexp_replace(message, '\d\d:\d\d', 'HH:MI'), '\d{4}-\d\d-\d\d ', 'YYYY-MM-DD ') AS message,
       count,
       message LIKE '%since ' || to_char(since, CASE WHEN since < now() - interval '1 day'
                                                    THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END) || '%' AS time_ok
  FROM idemgate.alerts ORDER BY alert, message;

-- The contract's columns.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'idemgate.alerts'::regclass AND attnum > 0 ORDER BY attnum;

BEGIN;
SET LOCAL deadlock_timeout = '60s';
SET LOCAL timezone = 'UTC';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state;
SELECT * FROM idemgate.alerts;
SELECT idemgate.publish_alerts();

-- ---------------------------------------------------------------------
-- Silence. A workflow expected every 15 minutes fires the alert only after
-- more than 30 minutes without a claim, counted from when it was watched.
SELECT idemgate.watch_workflow('alerts-wf', '15 minutes');
SELECT * FROM pg_temp.shown;
UPDATE idemgate.watched_workflows SET created_at = now() - interval '30 minutes';
SELECT * FROM pg_temp.shown;
UPDATE idemgate.watched_workflows SET created_at = now() - interval '31 minutes';
SELECT * FROM pg_temp.shown;
-- count is the number of intervals missed; since is when it went quiet.
SELECT count, since = now() - interval '31 minutes' AS since_ok FROM idemgate.alerts;
-- A claim of the workflow clears it ...
SELECT outcome FROM idemgate.claim('alerts-1', '{}', workflow => 'alerts-wf');
SELECT count(*) FROM idemgate.alerts;
-- ... and silence is then counted from that claim.
UPDATE idemgate.runs SET created_at = now() - interval '2 hours' WHERE idempotency_key = 'alerts-1';
SELECT * FROM pg_temp.shown;
-- A duplicate delivery is a claim too: the trigger is alive.
SELECT outcome FROM idemgate.claim('alerts-1', '{}');
SELECT count(*) FROM idemgate.alerts;
UPDATE idemgate.events SET at = now() - interval '40 minutes' WHERE idempotency_key = 'alerts-1';
-- A claim of another workflow does not count; a silence of days shows the date.
SELECT outcome FROM idemgate.claim('alerts-2', '{}', workflow => 'alerts-other');
SELECT idemgate.watch_workflow('alerts-nightly', '1 day');
UPDATE idemgate.watched_workflows SET created_at = now() - interval '50 hours' WHERE workflow = 'alerts-nightly';
SELECT * FROM pg_temp.shown;
-- Re-watching changes the interval but keeps the watch's start.
SELECT idemgate.watch_workflow('alerts-wf', '1 hour');
SELECT count(*) FROM idemgate.alerts WHERE message LIKE 'workflow alerts-wf %';
SELECT idemgate.watch_workflow('alerts-wf', '10 minutes');
SELECT * FROM pg_temp.shown WHERE message LIKE 'workflow alerts-wf %';
SELECT idemgate.unwatch_workflow('alerts-nightly'), idemgate.unwatch_workflow('alerts-nightly');
SELECT kind, actor IS NOT NULL AS has_actor, details FROM idemgate.events
 WHERE kind IN ('workflow_watched', 'workflow_unwatched') ORDER BY id;
SELECT idemgate.unwatch_workflow('alerts-wf');

-- ---------------------------------------------------------------------
-- Failure rate: more than idemgate.alert_failures (10) undelivered effects
-- of one type, or failed runs of one workflow, in 10 minutes.
SHOW idemgate.alert_failures;
SELECT pg_temp.enqueue('alerts-fx', 'alerts_invoice', ARRAY(SELECT 'customer-' || i FROM generate_series(1, 10) AS i));
-- Ten effects fail (to be retried): not more than the threshold.
SELECT pg_temp.fail_all('alerts_invoice', 'transport');
SELECT count(*) FROM idemgate.alerts;
-- The eleventh fires one alert, however many attempts failed.
SELECT pg_temp.enqueue('alerts-fx11', 'alerts_invoice', ARRAY['customer-11']);
SELECT pg_temp.fail_all('alerts_invoice', 'unavailable', 'customer-11');
SELECT * FROM pg_temp.shown;
-- A second failure of one of them: still 11 effects, still one alert.
SELECT pg_temp.fail_all('alerts_invoice', 'unavailable', 'customer-3');
SELECT * FROM pg_temp.shown;
-- An effect delivered on retry is no longer "not delivered".
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second' WHERE target = 'customer-1';
SELECT idemgate.complete_effect(effect_id, lease_owner) FROM idemgate.claim_effects('alerts_invoice', 1);
SELECT count(*) FROM idemgate.alerts;
-- Failures older than 10 minutes do not count either. (This round also
-- exhausts the attempts of customer-1 and customer-3: dead letters below.)
UPDATE idemgate.outbox SET state = 'pending' WHERE target = 'customer-1';
SELECT pg_temp.fail_all('alerts_invoice', 'transport') AS failed_again;
SELECT count(*) AS firing FROM idemgate.alerts;
UPDATE idemgate.events SET at = now() - interval '11 minutes'
 WHERE kind = 'effect_failed' AND effect_id = (SELECT effect_id FROM idemgate.outbox WHERE target = 'customer-2');
SELECT count(*) AS firing FROM idemgate.alerts;

-- Runs of a workflow that fail for good: eleven fire, ten do not.
SELECT count(*) FROM (SELECT idemgate.claim('alerts-run-' || i, '{}', workflow => 'alerts-leads')
                        FROM generate_series(1, 11) AS i) c;
SELECT count(*) FROM (SELECT idemgate.fail(idempotency_key, lease_owner, version, 'model', 'no draft', false)
                        FROM idemgate.runs WHERE workflow = 'alerts-leads' AND idempotency_key <> 'alerts-run-11') f;
SELECT count(*) FROM idemgate.alerts;
SELECT idemgate.fail(idempotency_key, lease_owner, version, 'model', 'no draft', false)
  FROM idemgate.runs WHERE idempotency_key = 'alerts-run-11';
SELECT * FROM pg_temp.shown;

-- ---------------------------------------------------------------------
-- Dead letters older than 1 hour (open ones), per workflow / effect type.
UPDATE idemgate.dead_letters SET dead_at = now() - interval '61 minutes'
 WHERE idempotency_key IN ('alerts-run-1', 'alerts-run-2', 'alerts-run-3');
UPDATE idemgate.dead_letters SET dead_at = now() - interval '59 minutes'
 WHERE idempotency_key IN ('alerts-run-4');
SELECT * FROM pg_temp.shown WHERE alert = 'dead_letters';
SELECT idemgate.reinject(id, 'alerts-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'alerts-run-1';
SELECT * FROM pg_temp.shown WHERE alert = 'dead_letters';
-- An effect rejected by the provider: a dead letter of its type.
SELECT pg_temp.enqueue('alerts-crm', 'alerts_crm_note', ARRAY['lead-9']);
SELECT pg_temp.fail_all('alerts_crm_note', 'rejected');
UPDATE idemgate.dead_letters SET dead_at = '2020-01-01 01:55:00+00' WHERE effect_id IS NOT NULL;
SELECT * FROM pg_temp.shown WHERE alert = 'dead_letters';

-- ---------------------------------------------------------------------
-- Unknown effects: sent, outcome unknown.
SELECT pg_temp.enqueue('alerts-sms', 'alerts_sms', ARRAY['phone-1', 'phone-2']);
SELECT pg_temp.fail_all('alerts_sms', 'timeout_after_send');
SELECT * FROM pg_temp.shown WHERE alert = 'unknown_effects';

-- ---------------------------------------------------------------------
-- publish_alerts: one notification per transition, never one per failure.
SELECT * FROM pg_temp.shown;
SELECT idemgate.publish_alerts() AS first, idemgate.publish_alerts() AS second;
SELECT alert, subject, severity, count FROM idemgate.alert_state ORDER BY alert, subject;
-- More failures of a firing alert: its count changes, no notification.
SELECT count(*) FROM (SELECT idemgate.claim('alerts-run-x' || i, '{}', workflow => 'alerts-leads')
                        FROM generate_series(1, 2) AS i) c;
SELECT count(*) FROM (SELECT idemgate.fail(idempotency_key, lease_owner, version, 'model', 'no draft', false)
                        FROM idemgate.runs WHERE idempotency_key LIKE 'alerts-run-x%') f;
SELECT idemgate.publish_alerts();
SELECT count FROM idemgate.alert_state WHERE alert = 'failure_rate' AND subject = 'workflow:alerts-leads';
-- One clears (the unknown sms are resolved), one starts (a silence): two.
SELECT idemgate.resolve_effect(effect_id, true, 'alerts-operator') FROM idemgate.outbox WHERE effect_type = 'alerts_sms';
SELECT idemgate.watch_workflow('alerts-quiet', '1 minute');
UPDATE idemgate.watched_workflows SET created_at = now() - interval '3 minutes';
SELECT idemgate.publish_alerts() AS transitions, idemgate.publish_alerts() AS again;
SELECT alert, subject FROM idemgate.alert_state ORDER BY alert, subject;
ROLLBACK;

-- Bad arguments.
SELECT a, pg_temp.sqlstate_of(q) FROM (VALUES
  ('null name', 'SELECT idemgate.watch_workflow(NULL, ''1 minute'')'),
  ('null interval', 'SELECT idemgate.watch_workflow(''w'', NULL)'),
  ('empty name', 'SELECT idemgate.watch_workflow('''', ''1 minute'')'),
  ('zero interval', 'SELECT idemgate.watch_workflow(''w'', ''0'')'),
  ('negative interval', 'SELECT idemgate.watch_workflow(''w'', ''-1 minute'')'),
  ('two years', 'SELECT idemgate.watch_workflow(''w'', ''2 years'')'),
  ('unwatch null', 'SELECT idemgate.unwatch_workflow(NULL)')
) AS t(a, q);

-- Privileges: readers see alerts; only operators watch and publish.
CREATE ROLE alerts_reader;
CREATE ROLE alerts_client;
SELECT idemgate.grant_role('alerts_reader', 'reader');
SELECT idemgate.grant_role('alerts_client', 'client');
SELECT r, has_table_privilege(r, 'idemgate.alerts', 'SELECT') AS alerts,
       has_table_privilege(r, 'idemgate.alert_instances', 'SELECT') AS instances,
       has_table_privilege(r, 'idemgate.alert_state', 'SELECT') AS state,
       has_function_privilege(r, 'idemgate.watch_workflow(text,interval)', 'EXECUTE') AS watch,
       has_function_privilege(r, 'idemgate.publish_alerts()', 'EXECUTE') AS publish
  FROM (VALUES ('alerts_reader'), ('alerts_client')) AS t(r);
SET ROLE alerts_reader;
SELECT count(*) >= 0 AS ok FROM idemgate.alerts;
SELECT pg_temp.sqlstate_of('SELECT idemgate.publish_alerts()');
SET ROLE alerts_client;
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.alerts');
RESET ROLE;
SELECT idemgate.revoke_role('alerts_reader', 'reader');
SELECT idemgate.revoke_role('alerts_client', 'client');
DROP ROLE alerts_reader;
DROP ROLE alerts_client;
