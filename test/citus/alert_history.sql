-- test/citus/alert_history.sql — one scripted history that raises every
-- alert but dispatcher_missing, for test/citus/t/060_operator_reads.pl,
-- which runs it on a single node and on a Citus coordinator and compares
-- what the operator reads show. Run by a superuser in one transaction and
-- rolled back (like test/sql/alerts.sql): the dispatchers never see it.
-- The thresholds are the defaults (they are server settings): more than
-- 10 failures, more than 5 takeovers, 15 minutes stuck or stalled. Keys
-- are many and spread, so on Citus the rows lie on every shard.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only on
BEGIN;
SET LOCAL timezone = 'UTC';
SET LOCAL client_min_messages = error;
-- backdate sets column c of table t for keys prefix1 .. prefixN to ago
-- before now, key i one second more (so the first keys are ordered). One
-- statement per key, the time a constant: Citus refuses now() beside a
-- column in an UPDATE.
CREATE FUNCTION pg_temp.backdate(t text, c text, prefix text, n integer, ago interval)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. n LOOP
    EXECUTE format('UPDATE idemgate.%I SET %I = $1 WHERE idempotency_key = $2', t, c)
      USING now() - ago - i * interval '1 second', prefix || i;
  END LOOP;
END $$;

-- failure_rate per effect type: 11 effects of type ah-fail failed once,
-- back to pending later.
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ah-fail', 'target', 't', 'payload', '{}'::jsonb))
    FROM generate_series(1, 11) i,
         LATERAL idemgate.claim('ah-fail-' || i, '{}', workflow => 'ah-billing') c) x \g /dev/null
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second' WHERE effect_type = 'ah-fail';
SELECT count(idemgate.fail_effect(c.effect_id, c.lease_owner, 'transport', 'scripted'))
  FROM idemgate.claim_effects('ah-fail', 100, '1 minute') c \g /dev/null

-- failure_rate per workflow and terminal_failure: 11 runs of ah-leads
-- failed for good; one of them died two hours ago (dead_letters instead).
SELECT count(idemgate.fail(c.idempotency_key, c.lease_owner, c.version, 'model', 'no draft', false))
  FROM generate_series(1, 11) i,
       LATERAL idemgate.claim('ah-dead-' || i, '{}', workflow => 'ah-leads') c \g /dev/null
UPDATE idemgate.dead_letters SET dead_at = now() - interval '2 hours' WHERE idempotency_key = 'ah-dead-7';

-- unknown_effects: two effects in doubt.
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ah-doubt', 'target', 't', 'payload', '{}'::jsonb))
    FROM generate_series(1, 2) i,
         LATERAL idemgate.claim('ah-doubt-' || i, '{}', workflow => 'ah-billing') c) x \g /dev/null
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second' WHERE effect_type = 'ah-doubt';
SELECT count(idemgate.fail_effect(c.effect_id, c.lease_owner, 'timeout_after_send', 'scripted'))
  FROM idemgate.claim_effects('ah-doubt', 100, '1 minute') c \g /dev/null

-- stuck_effects and type_paused: 5 effects of ah-stuck due 20 minutes ago
-- (the type is paused), 3 of ah-late due 30 minutes ago and 4 of ah-late
-- due now.
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', CASE WHEN i <= 5 THEN 'ah-stuck' ELSE 'ah-late' END,
                              'target', 't', 'payload', '{}'::jsonb))
    FROM generate_series(1, 12) i,
         LATERAL idemgate.claim('ah-stuck-' || i, '{}', workflow => 'ah-billing') c) x \g /dev/null
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '20 minutes' WHERE effect_type = 'ah-stuck';
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '30 minutes'
 WHERE effect_type = 'ah-late' AND idempotency_key IN ('ah-stuck-6', 'ah-stuck-7', 'ah-stuck-8');
SELECT idemgate.pause_effect_type('ah-stuck', 'ah-ops', 'scripted pause') \g /dev/null

-- kill_switch_off.
SELECT idemgate.set_actions_enabled(false, 'ah-ops', 'scripted stop') \g /dev/null

-- silence: ah-quiet registered 10 minutes ago and never claimed; ah-old
-- last claimed 5 minutes ago; ah-busy claimed now (no alert).
SELECT idemgate.watch_workflow(w, interval '1 minute') FROM unnest('{ah-quiet,ah-old,ah-busy}'::text[]) w \g /dev/null
UPDATE idemgate.watched_workflows SET created_at = now() - interval '10 minutes';
SELECT count(*) FROM generate_series(1, 3) i, LATERAL idemgate.claim('ah-old-' || i, '{}', workflow => 'ah-old') c \g /dev/null
SELECT pg_temp.backdate('runs', 'created_at', 'ah-old-', 3, interval '5 minutes') \g /dev/null
SELECT count(*) FROM generate_series(1, 3) i, LATERAL idemgate.claim('ah-busy-' || i, '{}', workflow => 'ah-busy') c \g /dev/null

-- stalled_runs: 4 runs of ah-stall left processing, their leases expired
-- 20 minutes ago.
SELECT count(*) FROM generate_series(1, 4) i, LATERAL idemgate.claim('ah-stall-' || i, '{}', workflow => 'ah-stall') c \g /dev/null
SELECT pg_temp.backdate('runs', 'lease_expires_at', 'ah-stall-', 4, interval '20 minutes') \g /dev/null
UPDATE idemgate.runs SET updated_at = now() - interval '21 minutes' WHERE workflow = 'ah-stall';

-- lease_takeovers: 6 runs of ah-crash whose leases expired, claimed again.
SELECT count(*) FROM generate_series(1, 6) i, LATERAL idemgate.claim('ah-crash-' || i, '{}', workflow => 'ah-crash') c \g /dev/null
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE workflow = 'ah-crash';
SELECT count(*) FROM generate_series(1, 6) i, LATERAL idemgate.claim('ah-crash-' || i, '{}', workflow => 'ah-crash') c \g /dev/null

-- unsettled_runs: 3 runs of ah-settled approved with every effect
-- completed 2 minutes ago; one more with an effect still pending (no
-- alert).
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ah-done', 'target', 't', 'payload', '{}'::jsonb))
    FROM generate_series(1, 4) i,
         LATERAL idemgate.claim('ah-settled-' || i, '{}', workflow => 'ah-settled') c) x \g /dev/null
UPDATE idemgate.outbox SET state = 'completed'
 WHERE idempotency_key IN ('ah-settled-1', 'ah-settled-2', 'ah-settled-3');
SELECT pg_temp.backdate('outbox', 'updated_at', 'ah-settled-', 3, interval '2 minutes') \g /dev/null
UPDATE idemgate.runs SET updated_at = now() - interval '3 minutes' WHERE workflow = 'ah-settled';

-- What the operator reads show: alerts with the clock masked, and the
-- alert lines of prometheus().
SELECT 'alert|' || alert || '|' || severity || '|' || count || '|'
       || regexp_replace(message, '\d\d:\d\d', 'HH:MI', 'g')
  FROM idemgate.alerts ORDER BY alert, message;
SELECT 'prometheus|' || line
  FROM regexp_split_to_table(idemgate.prometheus(), '\n') AS line
 WHERE line ~ '^idemgate_(alert|effects_pending|effects_unknown|effects_paused)'
 ORDER BY line;
ROLLBACK;
