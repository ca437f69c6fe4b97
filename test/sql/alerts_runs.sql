-- The alerts about runs (docs/operations.md, "Alerts"): stalled_runs,
-- terminal_failure, lease_takeovers and payload_mismatch, each naming the
-- workflow and the first keys, in the view, in alert_state (what
-- publish_alerts notifies) and in Prometheus.
--
-- Like alerts.sql, the history is scripted in one transaction over empty
-- tables and rolled back; now() is constant inside, so time is moved with
-- UPDATEs. The IG001 refusals are counted in shared memory, which a
-- rollback does not undo: that is the point (clear_payload_mismatches()
-- starts and ends the file clean). pgTAP.
\i test/sql/include/quiet.psql
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
-- claim_in claims key k for workflow wf (NULL: none) with a 1-minute lease.
CREATE FUNCTION pg_temp.claim_in(k text, wf text, p jsonb DEFAULT '{}') RETURNS text LANGUAGE sql AS $$
  SELECT outcome FROM idemgate.claim(k, p, '1 minute', wf)
$$;
-- fail_now fails run k as its lease holder; returns the new state.
CREATE FUNCTION pg_temp.fail_now(k text, retryable boolean) RETURNS text LANGUAGE sql AS $$
  SELECT idemgate.fail(k, lease_owner, version, 'model', 'no draft', retryable)
    FROM idemgate.runs WHERE idempotency_key = k
$$;
-- expire_lease ends run k's lease ago before now (and its last change too).
CREATE FUNCTION pg_temp.expire_lease(k text, ago interval) RETURNS void LANGUAGE sql AS $$
  UPDATE idemgate.runs SET lease_expires_at = now() - ago, updated_at = now() - ago - interval '1 minute'
   WHERE idempotency_key = k
$$;
CREATE VIEW pg_temp.shown AS
SELECT alert, severity,
       regexp_replace(regexp_replace(message, '\d\d:\d\d', 'HH:MI'), '\d{4}-\d\d-\d\d ', 'YYYY-MM-DD ') AS message,
       count,
       message LIKE '%since ' || to_char(since, CASE WHEN since < now() - interval '1 day'
                                                    THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END) || '%' AS time_ok
  FROM idemgate.alerts
 WHERE alert IN ('stalled_runs', 'terminal_failure', 'lease_takeovers', 'payload_mismatch')
 ORDER BY alert, message;
\i test/sql/include/as_role.psql
SELECT idemgate.clear_payload_mismatches() \g /dev/null
BEGIN;
SET LOCAL deadlock_timeout = '60s';
SET LOCAL timezone = 'UTC';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
SELECT * FROM no_plan();

SELECT pg_temp.rows_are($$current_setting('idemgate.alert_stalled_after'), current_setting('idemgate.alert_lease_takeovers'),
                          current_setting('idemgate.alert_notify_details')$$, '(15min,5,on)');
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'no alerts about runs');

-- ---------------------------------------------------------------------
-- stalled_runs: a run left processing with an expired lease, or
-- failed_retryable and not redelivered, for longer than 15 minutes.
SELECT pg_temp.rows_are($$pg_temp.claim_in(k, 'stall-wf') FROM unnest(ARRAY['st-1', 'st-2', 'st-3']) AS k$$,
                        '(claimed)', '(claimed)', '(claimed)');
-- A worker that died 14 minutes ago: not yet.
SELECT pg_temp.expire_lease('st-1', '14 minutes') \g /dev/null
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'a lease expired 14 minutes ago: not stalled yet');
-- 16 minutes: the run is named with its workflow.
SELECT pg_temp.expire_lease('st-1', '16 minutes') \g /dev/null
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(stalled_runs,warning,"run st-1 of workflow stall-wf stalled since HH:MI (lease expired, not taken over: is a worker down or a trigger off?)",1,t)');
SELECT pg_temp.rows_are($$subject, keys, since = now() - interval '16 minutes' FROM idemgate.alert_instances WHERE alert = 'stalled_runs'$$,
                        '(workflow:stall-wf,{st-1},t)');
-- A live lease, however old the claim, is not stalled: st-3 keeps working.
UPDATE idemgate.runs SET updated_at = now() - interval '50 minutes' WHERE idempotency_key = 'st-3';
-- A retryable failure nobody redelivers, 20 minutes ago: the oldest first.
SELECT pg_temp.rows_are($$pg_temp.fail_now('st-2', true)$$, '(failed_retryable)');
UPDATE idemgate.runs SET updated_at = now() - interval '20 minutes' WHERE idempotency_key = 'st-2';
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(stalled_runs,warning,"2 runs of workflow stall-wf stalled since HH:MI (first: st-2, st-1; 1 with an expired lease, 1 failed_retryable not redelivered: is a worker down or a trigger off?)",2,t)');
-- A run without a workflow, with a long key (shown cut to 64 characters).
SELECT pg_temp.rows_are($$pg_temp.claim_in(repeat('k', 100), NULL)$$, '(claimed)');
SELECT pg_temp.expire_lease(repeat('k', 100), '1 hour') \g /dev/null
SELECT pg_temp.rows_are($$* FROM pg_temp.shown WHERE message LIKE '%without a workflow%'$$,
                        '(stalled_runs,warning,"run kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk... without a workflow stalled since HH:MI (lease expired, not taken over: is a worker down or a trigger off?)",1,t)');
SELECT pg_temp.rows_are($$subject, char_length(keys[1]) FROM idemgate.alert_instances WHERE alert = 'stalled_runs' ORDER BY subject$$,
                        '(no_workflow,64)', '(workflow:stall-wf,4)');
-- Redelivered (taken over): no longer stalled.
SELECT pg_temp.rows_are($$pg_temp.claim_in('st-2', 'stall-wf'), pg_temp.claim_in('st-1', 'stall-wf')$$, '(recovered,recovered)');
SELECT pg_temp.rows_are($$alert, subject FROM idemgate.alert_instances WHERE alert = 'stalled_runs'$$, '(stalled_runs,no_workflow)');
SELECT pg_temp.rows_are($$pg_temp.claim_in(repeat('k', 100), NULL)$$, '(recovered)');
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'every stalled run taken over: the alert clears');

-- ---------------------------------------------------------------------
-- terminal_failure: at once, per workflow, while the dead letter is open
-- and less than an hour old (then dead_letters takes over).
SELECT pg_temp.rows_are($$pg_temp.claim_in('tf-1', 'invoices'), pg_temp.fail_now('tf-1', false)$$, '(claimed,failed_terminal)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(terminal_failure,warning,"run tf-1 of workflow invoices failed for good since HH:MI (model; its input is in the dead letter: reinject or supersede)",1,t)');
-- Retries that run out (idemgate.max_run_attempts = 3) are a terminal failure too.
SELECT pg_temp.rows_are($$pg_temp.claim_in('tf-2', 'invoices'), pg_temp.fail_now('tf-2', true)$$, '(claimed,failed_retryable)');
SELECT pg_temp.rows_are($$pg_temp.claim_in('tf-2', 'invoices'), pg_temp.fail_now('tf-2', true)$$, '(recovered,failed_retryable)');
SELECT pg_temp.rows_are($$pg_temp.claim_in('tf-2', 'invoices'), pg_temp.fail_now('tf-2', true)$$, '(recovered,failed_terminal)');
UPDATE idemgate.dead_letters SET dead_at = now() - interval '5 minutes' WHERE idempotency_key = 'tf-2';
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(terminal_failure,warning,"2 runs of workflow invoices failed for good since HH:MI (first: tf-2, tf-1; their inputs are in the dead letters: reinject or supersede)",2,t)');
-- A human rejection is a decision, not a failure: no dead letter, no alert.
SELECT pg_temp.rows_are($$pg_temp.claim_in('tf-3', 'invoices')$$, '(claimed)');
SELECT token AS tf3_token FROM idemgate.request_approval('tf-3', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'tf-3'), 0,
                                                          '{"type": "mail", "target": "a", "payload": {}}') \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'tf3_token', 'reject', 'ana', 'wrong amount')), 'rejected', 'tf-3 rejected by a human');
SELECT pg_temp.rows_are($$count FROM idemgate.alerts WHERE alert = 'terminal_failure'$$, '(2)');
-- Reinjected: no longer a failure waiting for a person.
SELECT pg_temp.rows_are($$idemgate.reinject(id, 'alerts-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'tf-1'$$, '(t)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(terminal_failure,warning,"run tf-2 of workflow invoices failed for good since HH:MI (model; its input is in the dead letter: reinject or supersede)",1,t)');
-- An hour later the open dead letter is the dead_letters alert's.
UPDATE idemgate.dead_letters SET dead_at = now() - interval '61 minutes' WHERE idempotency_key = 'tf-2';
SELECT pg_temp.rows_are($$alert, message ~ 'of workflow invoices older than 1 hour' FROM idemgate.alerts
                          WHERE alert IN ('dead_letters', 'terminal_failure')$$, '(dead_letters,t)');
UPDATE idemgate.dead_letters SET reinjected_at = now() WHERE idempotency_key = 'tf-2';

-- ---------------------------------------------------------------------
-- lease_takeovers: more than 5 takeovers of expired leases in one
-- workflow in 10 minutes. takeover(k) claims k, lets its lease expire and
-- claims it again.
CREATE FUNCTION pg_temp.takeover(k text) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.claim_in(k, 'crm-sync');
  UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = k;
  SELECT pg_temp.claim_in(k, 'crm-sync');
$$;
SELECT pg_temp.rows_are($$pg_temp.takeover('to-' || i) FROM generate_series(1, 5) AS i$$,
                        '(recovered)', '(recovered)', '(recovered)', '(recovered)', '(recovered)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.events WHERE kind = 'recovered' AND details->>'from' = 'processing'
                                                   AND details->>'workflow' = 'crm-sync'$$, '(5)');
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'five takeovers: not more than idemgate.alert_lease_takeovers');
-- Redeliveries of failed_retryable runs are retries, not takeovers of a lease.
SELECT pg_temp.rows_are($$pg_temp.claim_in('to-r', 'crm-sync'), pg_temp.fail_now('to-r', true), pg_temp.claim_in('to-r', 'crm-sync')$$,
                        '(claimed,failed_retryable,recovered)');
SELECT pg_temp.rows_are($$details->>'from' FROM idemgate.events WHERE kind = 'recovered' AND idempotency_key = 'to-r'$$, '(failed_retryable)');
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'a redelivery is not a lease takeover');
-- The sixth fires, naming the workflow and the first keys.
SELECT pg_temp.rows_are($$pg_temp.takeover('to-6')$$, '(recovered)');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(lease_takeovers,warning,"6 expired leases of workflow crm-sync taken over in 10 minutes since HH:MI (first: to-1, to-2, to-3; workers dying, or leases shorter than the work: compare run_metrics())",6,t)');
-- Older than 10 minutes: not counted.
UPDATE idemgate.events SET at = now() - interval '11 minutes' WHERE kind = 'recovered' AND idempotency_key = 'to-1';
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'a takeover 11 minutes ago is out of the window');

-- ---------------------------------------------------------------------
-- payload_mismatch: IG001 refusals, counted though their transaction
-- (here the subtransaction of throws_ok) rolls back.
SELECT pg_temp.rows_are($$pg_temp.claim_in('pm-1', 'lead-intake', '{"amount": 10}'), pg_temp.claim_in('pm-2', 'lead-intake', '{"amount": 20}')$$,
                        '(claimed,claimed)');
SELECT throws_ok($$SELECT pg_temp.claim_in('pm-1', 'lead-intake', '{"amount": 11}')$$, 'IG001',
                 'idempotency key "pm-1" was already used with a different payload', 'pm-1 with another payload: IG001');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(payload_mismatch,critical,"key pm-1 of workflow lead-intake delivered again with a different payload since HH:MI (IG001, refused: stop and investigate upstream)",1,t)');
SELECT pg_temp.rows_are($$workflow, mismatches, first_keys, firing, first_at <= last_at FROM idemgate.payload_mismatches()$$,
                        '(lead-intake,1,{pm-1},t,t)');
-- More: counted (the same key once among the first keys), through the jsonb form too.
SELECT throws_ok($$SELECT * FROM idemgate.claim('{"key": "pm-2", "payload": {"amount": 21}}'::jsonb)$$, 'IG001',
                 'idempotency key "pm-2" was already used with a different payload', 'pm-2 through claim(jsonb): IG001');
SELECT throws_ok($$SELECT pg_temp.claim_in('pm-1', 'lead-intake', '{"amount": 12}')$$, 'IG001',
                 'idempotency key "pm-1" was already used with a different payload', 'pm-1 again: IG001');
SELECT pg_temp.rows_are($$* FROM pg_temp.shown$$,
                        '(payload_mismatch,critical,"3 deliveries of workflow lead-intake reused a key with a different payload since HH:MI (first: pm-1, pm-2; IG001, refused: stop and investigate upstream)",3,t)');
-- A run without a workflow is counted under the workflow the claim names.
SELECT pg_temp.rows_are($$pg_temp.claim_in('pm-3', NULL)$$, '(claimed)');
SELECT throws_ok($$SELECT pg_temp.claim_in('pm-3', 'webhook-x', '{"x": 1}')$$, 'IG001',
                 'idempotency key "pm-3" was already used with a different payload', 'pm-3: IG001');
SELECT pg_temp.rows_are($$alert, subject, count, keys FROM idemgate.alert_instances WHERE alert = 'payload_mismatch' ORDER BY subject$$,
                        '(payload_mismatch,workflow:lead-intake,3,"{pm-1,pm-2}")',
                        '(payload_mismatch,workflow:webhook-x,1,{pm-3})');
-- Nothing of the refused claims was written.
SELECT pg_temp.rows_are($$count(*) FROM idemgate.events WHERE idempotency_key LIKE 'pm-%'$$, '(0)');

-- ---------------------------------------------------------------------
-- publish_alerts keeps what it announced, keys included; prometheus()
-- names the keys beside the count.
SELECT pg_temp.rows_are($$idemgate.publish_alerts()$$, '(2)');
SELECT pg_temp.rows_are($$alert, subject, count, keys FROM idemgate.alert_state ORDER BY alert, subject$$,
                        '(payload_mismatch,workflow:lead-intake,3,"{pm-1,pm-2}")',
                        '(payload_mismatch,workflow:webhook-x,1,{pm-3})');
SELECT is((SELECT string_agg(l, E'\n' ORDER BY l) FROM regexp_split_to_table(idemgate.prometheus(), E'\n') AS l
             WHERE l LIKE 'idemgate_alert%payload_mismatch%'),
          'idemgate_alert_first_keys{alert="payload_mismatch",subject="workflow:lead-intake",keys="pm-1, pm-2"} 3
idemgate_alert_first_keys{alert="payload_mismatch",subject="workflow:webhook-x",keys="pm-3"} 1
idemgate_alerts_firing{alert="payload_mismatch",severity="critical",subject="workflow:lead-intake"} 3
idemgate_alerts_firing{alert="payload_mismatch",severity="critical",subject="workflow:webhook-x"} 1',
          'prometheus(): the count per workflow, and the keys');

-- Privileges: readers see the alerts (the view calls payload_mismatches);
-- only operators clear the counts.
CREATE ROLE alerts_runs_reader;
CREATE ROLE alerts_runs_client;
SELECT idemgate.grant_role('alerts_runs_reader', 'reader') \g /dev/null
SELECT idemgate.grant_role('alerts_runs_client', 'client') \g /dev/null
SELECT is(pg_temp.as_role('alerts_runs_reader', $$SELECT string_agg(alert, ',' ORDER BY message) FROM idemgate.alerts WHERE alert = 'payload_mismatch'$$),
          'payload_mismatch,payload_mismatch', 'a reader reads the payload_mismatch alerts');
SELECT throws_ok($$SELECT pg_temp.as_role('alerts_runs_reader', 'SELECT idemgate.clear_payload_mismatches()')$$, '42501',
                 'permission denied for function clear_payload_mismatches', 'a reader may not clear the counts');
SELECT throws_ok($$SELECT pg_temp.as_role('alerts_runs_client', 'SELECT count(*) FROM idemgate.payload_mismatches()')$$, '42501',
                 'permission denied for function payload_mismatches', 'a client may not read them');
SELECT idemgate.revoke_role('alerts_runs_reader', 'reader') \g /dev/null
SELECT idemgate.revoke_role('alerts_runs_client', 'client') \g /dev/null
DROP ROLE alerts_runs_reader;
DROP ROLE alerts_runs_client;

-- An operator who has investigated ends the alert; the act is audited.
SELECT pg_temp.rows_are($$idemgate.clear_payload_mismatches()$$, '(4)');
SELECT is_empty($$SELECT * FROM pg_temp.shown$$, 'cleared: no alerts about runs');
SELECT pg_temp.rows_are($$kind, actor = session_user, details FROM idemgate.events WHERE kind = 'payload_mismatches_cleared'$$,
                        '(payload_mismatches_cleared,t,"{""workflows"": 2, ""mismatches"": 4}")');

SELECT * FROM finish();
ROLLBACK;
SELECT idemgate.clear_payload_mismatches() \g /dev/null
