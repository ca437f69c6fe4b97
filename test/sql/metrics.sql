-- metrics(since) and prometheus(): a scripted history with known answers.
--
-- Everything runs in one transaction that starts from empty tables and is
-- rolled back, so other test files' data (and the dispatcher, which waits
-- on our locks) cannot change the figures. Inside it now() is constant:
-- every event is stamped with the transaction start, and the history is
-- moved in time with UPDATEs (as superuser) to get exact answers.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- attempt claims the one due effect of type t and completes it (err NULL) or
-- fails it with error class err; returns the effect's new state.
CREATE FUNCTION pg_temp.attempt(t text, err text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second'
   WHERE effect_type = t AND state = 'pending';
  SELECT * INTO c FROM idemgate.claim_effects(t, 1, '1 minute');
  IF NOT FOUND THEN RETURN 'nothing claimed'; END IF;
  IF err IS NULL THEN
    RETURN CASE WHEN idemgate.complete_effect(c.effect_id, c.lease_owner, 'provider-1') THEN 'completed' END;
  END IF;
  RETURN idemgate.fail_effect(c.effect_id, c.lease_owner, err, 'scripted failure');
END $$;

-- The contract's result columns.
SELECT pg_catalog.pg_get_function_result('idemgate.metrics(timestamptz)'::regprocedure);

BEGIN;
-- The dispatcher's deadlock check must fire before ours if it ever waits on us.
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows,
           idemgate.metrics_rollup, idemgate.effect_type_rollup, idemgate.endpoints,
           idemgate.paused_effect_types IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state,
         idemgate.metrics_rollup, idemgate.effect_type_rollup, idemgate.endpoints,
         idemgate.paused_effect_types;

-- Nothing happened yet: counts 0, rates and percentiles NULL (no
-- denominator), no dead letter so no age.
SELECT * FROM idemgate.metrics();

-- Claims: nine new keys (metrics-9 of them 8 days old), three duplicates
-- inside the window and one outside, one recovery.
SELECT count(*) FROM (SELECT (idemgate.claim('metrics-' || i, '{"n": 1}', workflow => 'metrics-wf')).outcome
                        FROM generate_series(1, 9) AS i) c;
SELECT outcome FROM idemgate.claim('metrics-1', '{"n": 1}');
SELECT outcome FROM idemgate.claim('metrics-1', '{"n": 1}');
SELECT outcome FROM idemgate.claim('metrics-2', '{"n": 1}');
SELECT outcome FROM idemgate.claim('metrics-9', '{"n": 1}');
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'metrics-3';
SELECT outcome FROM idemgate.claim('metrics-3', '{"n": 1}');

-- Validations: one invalid out of four.
SELECT lease_owner AS o1, version AS v1 FROM idemgate.runs WHERE idempotency_key = 'metrics-1' \gset
SELECT lease_owner AS o2, version AS v2 FROM idemgate.runs WHERE idempotency_key = 'metrics-2' \gset
SELECT valid, attempt FROM idemgate.record_validation('metrics-1', :'o1', :v1, '{"a": 1}', '{"required": ["b"]}');
SELECT valid, attempt FROM idemgate.record_validation('metrics-1', :'o1', :v1, '{"b": 1}', '{"required": ["b"]}');
SELECT valid, attempt FROM idemgate.record_validation('metrics-2', :'o2', :v2, '{"b": 1}', '{"required": ["b"]}');
SELECT valid, attempt FROM idemgate.record_validation('metrics-2', :'o2', :v2, '{"b": 2}', '{"required": ["b"]}');
-- A lost owner's call is not a validation.
SELECT valid FROM idemgate.record_validation('metrics-2', :'o1', :v2, '{"b": 2}', '{"required": ["b"]}');

-- Approvals: decided after waits of 10, 20, 30 and 40 minutes (three
-- approved, one rejected); metrics-9's was decided 8 days ago after 100
-- minutes; metrics-5's is still pending. The waits are set on the rows
-- after the decision (request and decision share this transaction's now()).
CREATE FUNCTION pg_temp.decide(k text, decision text, waited interval) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; a record; c record;
BEGIN
  SELECT * INTO r FROM idemgate.runs WHERE idempotency_key = k;
  SELECT * INTO a FROM idemgate.request_approval(k, r.lease_owner, r.version,
                        '{"type": "metrics_human", "target": "desk", "payload": {}}');
  IF decision IS NULL THEN RETURN 'pending'; END IF;
  SELECT * INTO c FROM idemgate.consume_approval(a.token, decision, 'metrics-approver');
  UPDATE idemgate.approvals SET created_at = consumed_at - waited WHERE approval_id = a.approval_id;
  RETURN c.outcome;
END $$;
SELECT pg_temp.decide('metrics-1', 'approve', '10 minutes'), pg_temp.decide('metrics-2', 'approve', '20 minutes'),
       pg_temp.decide('metrics-3', 'approve', '30 minutes'), pg_temp.decide('metrics-4', 'reject', '40 minutes'),
       pg_temp.decide('metrics-9', 'approve', '100 minutes'), pg_temp.decide('metrics-5', NULL, NULL);
-- metrics-9 happened 8 days ago: its run, its events and its approval.
UPDATE idemgate.runs SET created_at = now() - interval '8 days' WHERE idempotency_key = 'metrics-9';
UPDATE idemgate.events SET at = now() - interval '8 days' WHERE idempotency_key = 'metrics-9';
UPDATE idemgate.approvals SET consumed_at = consumed_at - interval '8 days', created_at = created_at - interval '8 days'
 WHERE idempotency_key = 'metrics-9';

-- Automatic path: two enqueue_effect calls (metrics-6 with four effects,
-- metrics-7 with one).
SELECT lease_owner AS o6, version AS v6 FROM idemgate.runs WHERE idempotency_key = 'metrics-6' \gset
SELECT lease_owner AS o7, version AS v7 FROM idemgate.runs WHERE idempotency_key = 'metrics-7' \gset
SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('metrics-6', :'o6', :v6,
  (SELECT jsonb_agg(jsonb_build_object('type', 'metrics_e' || i, 'target', 'customer-' || i, 'payload', '{}'))
     FROM generate_series(1, 4) AS i));
SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('metrics-7', :'o7', :v7,
  '{"type": "metrics_auto", "target": "crm", "payload": {}}');

-- Effects of metrics-6: e1 fails three times with transport errors (two
-- retries, then exhausted into a dead letter); e2 is rejected (a dead
-- letter, not an exhaustion); e3 times out after sending (unknown); e4 is
-- delivered.
SELECT pg_temp.attempt('metrics_e1', 'transport') AS e1_1, pg_temp.attempt('metrics_e1', 'unavailable') AS e1_2,
       pg_temp.attempt('metrics_e1', 'transport') AS e1_3, pg_temp.attempt('metrics_e1', 'transport') AS e1_4,
       pg_temp.attempt('metrics_e2', 'rejected') AS e2, pg_temp.attempt('metrics_e3', 'timeout_after_send') AS e3,
       pg_temp.attempt('metrics_e4', NULL) AS e4;
-- e2's dead letter is reinjected (no longer open); metrics-8 fails for
-- good (a second open dead letter), and e1's dead letter is two hours old.
SELECT idemgate.reinject(id, 'metrics-operator') FROM idemgate.dead_letters WHERE effect_id IS NOT NULL
   AND effect_id = (SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'metrics_e2');
SELECT lease_owner AS o8, version AS v8 FROM idemgate.runs WHERE idempotency_key = 'metrics-8' \gset
SELECT idemgate.fail('metrics-8', :'o8', :v8, 'model', 'no usable draft', false);
UPDATE idemgate.dead_letters SET dead_at = now() - interval '2 hours'
 WHERE effect_id = (SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'metrics_e1');

-- The answers over the default window (7 days):
--   claims 12 = 8 new runs + 1 recovered + 3 duplicates; duplicate_rate 3/12;
--   approvals 4 (3 approved), waits p50 25 min, p95 30 + 0.85 x 10 = 38.5 min;
--   validations 4, failure rate 1/4; auto 2; retries 2; exhausted 1 (e1);
--   unknown 1 (e3); open dead letters 2 (e1, metrics-8), oldest 2 hours.
\x on
SELECT * FROM idemgate.metrics();
\x off
-- A wider window takes in the old claim, duplicate and approval: 14 claims,
-- 4 duplicates, 5 decisions (4 approved), waits over 10..40 and 100 min:
-- p50 30 min, p95 40 + 0.8 x 60 = 88 min.
SELECT claims, duplicates, round(duplicate_rate::numeric, 4) AS duplicate_rate, approvals_decided,
       human_approved, approval_wait_p50, approval_wait_p95
  FROM idemgate.metrics(now() - interval '10 days');
-- A window that starts now holds only what this transaction did.
SELECT claims, validations, retries FROM idemgate.metrics(now());
-- The kill switch shows in actions_enabled.
SELECT idemgate.set_actions_enabled(false, 'metrics-operator', 'drill');
SELECT actions_enabled FROM idemgate.metrics();

-- prometheus(): the same figures over 7 days, exposition format. (The
-- number of running dispatchers depends on the test configuration; it
-- is checked against dispatcher_status() just below.)
SELECT regexp_replace(idemgate.prometheus(), 'idemgate_dispatchers_running \d+', 'idemgate_dispatchers_running N');
SELECT substring(idemgate.prometheus() FROM 'idemgate_dispatchers_running (\d+)')::int
       = (SELECT count(*) FROM idemgate.dispatcher_status() WHERE database = current_database()) AS dispatchers_gauge_ok;
-- Every sample line is "name{labels} value", every family has HELP and TYPE.
SELECT count(*) FILTER (WHERE l ~ '^# HELP idemgate_[a-z_]+ .+$') AS help,
       count(*) FILTER (WHERE l ~ '^# TYPE idemgate_[a-z_]+ (gauge|counter)$') AS type,
       count(*) FILTER (WHERE l ~ '^idemgate_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (NaN|-?[0-9.e+-]+)$') AS samples,
       count(*) AS lines
  FROM regexp_split_to_table(rtrim(idemgate.prometheus(), E'\n'), E'\n') AS l;
ROLLBACK;

-- Bad arguments.
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.metrics(NULL)');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.metrics(now() + interval ''1 hour'')');

-- Privileges: reader may read metrics and prometheus, a client may not.
CREATE ROLE metrics_reader;
CREATE ROLE metrics_client;
SELECT idemgate.grant_role('metrics_reader', 'reader');
SELECT idemgate.grant_role('metrics_client', 'client');
SELECT r, has_function_privilege(r, 'idemgate.metrics(timestamptz)', 'EXECUTE') AS metrics,
       has_function_privilege(r, 'idemgate.prometheus()', 'EXECUTE') AS prometheus
  FROM (VALUES ('metrics_reader'), ('metrics_client')) AS t(r);
SET ROLE metrics_reader;
SELECT claims >= 0 AS ok FROM idemgate.metrics();
SELECT idemgate.prometheus() LIKE '# HELP idemgate_claims %' AS ok;
SET ROLE metrics_client;
SELECT pg_temp.sqlstate_of('SELECT idemgate.prometheus()');
RESET ROLE;
SELECT idemgate.revoke_role('metrics_reader', 'reader');
SELECT idemgate.revoke_role('metrics_client', 'client');
DROP ROLE metrics_reader;
DROP ROLE metrics_client;
