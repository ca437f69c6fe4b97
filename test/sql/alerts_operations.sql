-- The alerts of docs/operations.md in idemgate.alerts: stuck_effects (due pending
-- effects older than idemgate.alert_stuck_after, also for a type with no
-- endpoint and no puller), kill_switch_off and type_paused (info),
-- dispatcher_missing (HTTP effects due in a database no running dispatcher
-- serves), dispatcher_status().database, and the NOTICE of CREATE
-- EXTENSION in a database the dispatcher does not serve.
--
-- Like alerts.sql, each scenario runs in a transaction that is rolled back,
-- over emptied tables, with time moved by UPDATEs; the dispatcher cannot
-- see (nor send) the uncommitted effects. Clock times are masked.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.enqueue(k text, t text, n int) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', '{}'))
     FROM generate_series(1, n) g));
  RETURN cardinality(e.effect_ids);
END $$;
CREATE VIEW pg_temp.shown AS
SELECT alert, severity, regexp_replace(message, '\d\d:\d\d', 'HH:MI') AS message, count,
       since IS NULL OR message LIKE '%since ' || to_char(since, 'HH24:MI') || '%' AS time_ok
  FROM idemgate.alerts ORDER BY alert, message;

-- The thresholds are settings with defaults.
SHOW idemgate.alert_stuck_after;
SHOW idemgate.alert_dispatcher_missing_after;
-- dispatcher_status() names the database each dispatcher serves.
SELECT DISTINCT database FROM idemgate.dispatcher_status();

BEGIN;
SET LOCAL timezone = 'UTC';
-- The dispatcher reads these tables every second (publish_alerts): a long
-- deadlock_timeout here makes it, not this script, the one a deadlock ends.
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
           idemgate.dead_letters, idemgate.watched_workflows, idemgate.paused_effect_types,
           idemgate.control IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events, idemgate.dead_letters,
         idemgate.watched_workflows, idemgate.paused_effect_types, idemgate.alert_state;
SELECT * FROM pg_temp.shown;

-- stuck_effects: a misspelled type (no endpoint, nobody pulls it). Due for
-- 14 minutes: quiet; for 16 minutes: fires, naming the likely cause.
SELECT pg_temp.enqueue('ops-alert-1', 'invoise', 3);
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '14 minutes' WHERE effect_type = 'invoise';
SELECT * FROM pg_temp.shown;
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '16 minutes' WHERE effect_type = 'invoise';
SELECT * FROM pg_temp.shown;
-- Not yet due (not_before / backoff in the future): not stuck, however old.
UPDATE idemgate.outbox SET created_at = now() - interval '2 days', next_attempt_at = now() + interval '1 hour'
 WHERE effect_type = 'invoise' AND target = 'target-1';
SELECT * FROM pg_temp.shown;
-- Claimed by a puller: not pending any more, the count drops.
SELECT count(*) FROM idemgate.claim_effects('invoise', 1);
SELECT * FROM pg_temp.shown;

-- type_paused (info) while paused; a stuck effect of a paused type says so.
SELECT idemgate.pause_effect_type('invoise', 'ana', 'typo, fixing upstream');
SELECT * FROM pg_temp.shown;
SELECT idemgate.resume_effect_type('invoise', 'ana');

-- kill_switch_off (info) while off, with who and why; stuck effects say so.
SELECT idemgate.set_actions_enabled(false, 'bob', 'incident 9');
SELECT * FROM pg_temp.shown;
-- alerts_firing(): the same alerts with their subject, as Prometheus gets them.
SELECT * FROM idemgate.alerts_firing();
SELECT idemgate.set_actions_enabled(true, 'bob', 'over');
SELECT * FROM pg_temp.shown;

-- An HTTP type in the database the dispatcher serves: no dispatcher_missing
-- (the effect is uncommitted, so the dispatcher cannot take it).
SELECT idemgate.register_endpoint('ops_hook', 'http://127.0.0.1:9/h');
SELECT pg_temp.enqueue('ops-alert-2', 'ops_hook', 2);
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '5 minutes' WHERE effect_type = 'ops_hook';
SELECT alert, count FROM idemgate.alerts WHERE alert = 'dispatcher_missing';
SELECT * FROM pg_temp.shown;
ROLLBACK;

-- A stricter threshold from the setting (SIGHUP): 5 minutes.
ALTER SYSTEM SET idemgate.alert_stuck_after = '5min';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW idemgate.alert_stuck_after;
BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.alert_state;
SELECT pg_temp.enqueue('ops-alert-3', 'slow_type', 1);
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '6 minutes' WHERE effect_type = 'slow_type';
SELECT alert, count FROM idemgate.alerts WHERE alert = 'stuck_effects';
ROLLBACK;
ALTER SYSTEM RESET idemgate.alert_stuck_after;
SELECT pg_reload_conf();

-- Another database, which the dispatcher does not serve: CREATE EXTENSION
-- says so, and HTTP effects due there raise dispatcher_missing.
CREATE DATABASE idemgate_elsewhere;
\c idemgate_elsewhere
\set VERBOSITY terse
SET client_min_messages = notice;
CREATE EXTENSION idemgate;
SET client_min_messages = warning;
SELECT count(*) AS dispatchers_here FROM idemgate.dispatcher_status() WHERE database = current_database();
SELECT idemgate.register_endpoint('elsewhere_hook', 'http://127.0.0.1:9/h');
SELECT cardinality(e.effect_ids) FROM idemgate.claim('ops-elsewhere-1', '{}') c,
       idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
         '[{"type": "elsewhere_hook", "target": "a", "payload": {}},
           {"type": "elsewhere_hook", "target": "b", "payload": {}}]') e;
-- due for less than idemgate.alert_dispatcher_missing_after (1 min): quiet
SELECT alert FROM idemgate.alerts;
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '2 minutes';
SELECT alert, severity, regexp_replace(message, '\d\d:\d\d', 'HH:MI') AS message, count FROM idemgate.alerts;
-- A pull-API type (no endpoint) there is not an HTTP effect: only these two count.
SELECT cardinality(e.effect_ids) FROM idemgate.claim('ops-elsewhere-2', '{}') c,
       idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
         '{"type": "pulled", "target": "a", "payload": {}}') e;
SELECT alert, count FROM idemgate.alerts WHERE alert = 'dispatcher_missing';
\c contrib_regression
DROP DATABASE idemgate_elsewhere;
