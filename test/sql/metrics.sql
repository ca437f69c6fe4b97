-- metrics(since) and prometheus(): a scripted history with known answers.
--
-- Everything runs in one transaction that starts from empty tables and is
-- rolled back (pgTAP and the test roles too), so other test files' data
-- (and the dispatcher, which waits on our locks) cannot change the figures.
-- Inside it now() is constant: every event is stamped with the transaction
-- start, and the history is moved in time with UPDATEs (as superuser) to
-- get exact answers. pgTAP.
\i test/sql/include/quiet.psql
BEGIN;
-- The dispatcher's deadlock check must fire before ours if it ever waits on us.
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows,
           idemgate.metrics_rollup, idemgate.effect_type_rollup, idemgate.endpoints,
           idemgate.paused_effect_types, idemgate.run_metrics_rollup IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state,
         idemgate.metrics_rollup, idemgate.effect_type_rollup, idemgate.endpoints,
         idemgate.paused_effect_types, idemgate.run_metrics_rollup;
-- Other files' IG001 refusals are counted in shared memory, not in a table.
SELECT idemgate.clear_payload_mismatches() \g /dev/null
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
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
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The contract's result columns.
SELECT is(pg_catalog.pg_get_function_result('idemgate.metrics(timestamptz)'::regprocedure),
          'TABLE(claims bigint, duplicates bigint, duplicate_rate double precision, recovered bigint, approvals_decided bigint, approval_wait_p50 interval, approval_wait_p95 interval, validations bigint, validation_failure_rate double precision, auto_approved bigint, human_approved bigint, retries bigint, retry_exhausted bigint, unknown_effects bigint, dead_letters_open bigint, oldest_dead_letter_age interval, actions_enabled boolean)', 'metrics: the contract''s result columns');

-- Nothing happened yet: counts 0, rates and percentiles NULL (no
-- denominator), no dead letter so no age.
SELECT results_eq('SELECT * FROM idemgate.metrics()',
                  $$VALUES (0::bigint, 0::bigint, NULL::float8, 0::bigint, 0::bigint, NULL::interval, NULL::interval, 0::bigint,
                            NULL::float8, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::interval, true)$$,
                  'nothing happened yet');

-- Claims: nine new keys (metrics-9 of them 8 days old), three duplicates
-- inside the window and one outside, one recovery.
SELECT is((SELECT count(*) FROM (SELECT (idemgate.claim('metrics-' || i, '{"n": 1}', workflow => 'metrics-wf')).outcome
                                   FROM generate_series(1, 9) AS i) c), 9::bigint, 'nine new keys');
SELECT is((SELECT outcome FROM idemgate.claim('metrics-1', '{"n": 1}')), 'duplicate', 'metrics-1 again: duplicate');
SELECT is((SELECT outcome FROM idemgate.claim('metrics-1', '{"n": 1}')), 'duplicate', 'metrics-1 again: duplicate');
SELECT is((SELECT outcome FROM idemgate.claim('metrics-2', '{"n": 1}')), 'duplicate', 'metrics-2 again: duplicate');
SELECT is((SELECT outcome FROM idemgate.claim('metrics-9', '{"n": 1}')), 'duplicate', 'metrics-9 again: duplicate');
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'metrics-3';
SELECT is((SELECT outcome FROM idemgate.claim('metrics-3', '{"n": 1}')), 'recovered', 'metrics-3: recovered');

-- Validations: one invalid out of four.
SELECT lease_owner AS o1, version AS v1 FROM idemgate.runs WHERE idempotency_key = 'metrics-1' \gset
SELECT lease_owner AS o2, version AS v2 FROM idemgate.runs WHERE idempotency_key = 'metrics-2' \gset
SELECT results_eq(format('SELECT valid, attempt FROM idemgate.record_validation(%L, %L, %s, %L, %L)', k, o, v, doc, '{"required": ["b"]}'),
                  format('VALUES (%L::boolean, %s)', valid, attempt), k || ' validation ' || attempt) FROM (VALUES
  (1, 'metrics-1', :'o1', :v1, '{"a": 1}', false, 1),
  (2, 'metrics-1', :'o1', :v1, '{"b": 1}', true, 2),
  (3, 'metrics-2', :'o2', :v2, '{"b": 1}', true, 1),
  (4, 'metrics-2', :'o2', :v2, '{"b": 2}', true, 2)
) AS t(n, k, o, v, doc, valid, attempt) ORDER BY n;
-- A lost owner's call is not a validation.
SELECT is((SELECT valid FROM idemgate.record_validation('metrics-2', :'o1', :v2, '{"b": 2}', '{"required": ["b"]}')), NULL,
          'a lost owner''s call: NULL');

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
SELECT results_eq($$SELECT pg_temp.decide('metrics-1', 'approve', '10 minutes'), pg_temp.decide('metrics-2', 'approve', '20 minutes'),
                           pg_temp.decide('metrics-3', 'approve', '30 minutes'), pg_temp.decide('metrics-4', 'reject', '40 minutes'),
                           pg_temp.decide('metrics-9', 'approve', '100 minutes'), pg_temp.decide('metrics-5', NULL, NULL)$$,
                  $$VALUES ('approved', 'approved', 'approved', 'rejected', 'approved', 'pending')$$, 'the approvals');
-- metrics-9 happened 8 days ago: its run, its events and its approval.
UPDATE idemgate.runs SET created_at = now() - interval '8 days' WHERE idempotency_key = 'metrics-9';
UPDATE idemgate.events SET at = now() - interval '8 days' WHERE idempotency_key = 'metrics-9';
UPDATE idemgate.approvals SET consumed_at = consumed_at - interval '8 days', created_at = created_at - interval '8 days'
 WHERE idempotency_key = 'metrics-9';

-- Automatic path: two enqueue_effect calls (metrics-6 with four effects,
-- metrics-7 with one).
SELECT lease_owner AS o6, version AS v6 FROM idemgate.runs WHERE idempotency_key = 'metrics-6' \gset
SELECT lease_owner AS o7, version AS v7 FROM idemgate.runs WHERE idempotency_key = 'metrics-7' \gset
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('metrics-6', :'o6', :v6,
             (SELECT jsonb_agg(jsonb_build_object('type', 'metrics_e' || i, 'target', 'customer-' || i, 'payload', '{}'))
                FROM generate_series(1, 4) AS i))), 4, 'metrics-6: four effects');
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('metrics-7', :'o7', :v7,
             '{"type": "metrics_auto", "target": "crm", "payload": {}}')), 1, 'metrics-7: one effect');

-- Effects of metrics-6: e1 fails three times with transport errors (two
-- retries, then exhausted into a dead letter); e2 is rejected (a dead
-- letter, not an exhaustion); e3 times out after sending (unknown); e4 is
-- delivered.
SELECT results_eq($$SELECT pg_temp.attempt('metrics_e1', 'transport'), pg_temp.attempt('metrics_e1', 'unavailable'),
                           pg_temp.attempt('metrics_e1', 'transport'), pg_temp.attempt('metrics_e1', 'transport'),
                           pg_temp.attempt('metrics_e2', 'rejected'), pg_temp.attempt('metrics_e3', 'timeout_after_send'),
                           pg_temp.attempt('metrics_e4', NULL)$$,
                  $$VALUES ('pending', 'pending', 'failed', 'nothing claimed', 'failed', 'unknown', 'completed')$$,
                  'the effects of metrics-6');
-- e2's dead letter is reinjected (no longer open); metrics-8 fails for
-- good (a second open dead letter), and e1's dead letter is two hours old.
SELECT is((SELECT idemgate.reinject(id, 'metrics-operator') FROM idemgate.dead_letters WHERE effect_id IS NOT NULL
             AND effect_id = (SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'metrics_e2')), true, 'e2 reinjected');
SELECT lease_owner AS o8, version AS v8 FROM idemgate.runs WHERE idempotency_key = 'metrics-8' \gset
SELECT is(idemgate.fail('metrics-8', :'o8', :v8, 'model', 'no usable draft', false), 'failed_terminal', 'metrics-8 fails for good');
UPDATE idemgate.dead_letters SET dead_at = now() - interval '2 hours'
 WHERE effect_id = (SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'metrics_e1');

-- The answers over the default window (7 days):
--   claims 12 = 8 new runs + 1 recovered + 3 duplicates; duplicate_rate 3/12;
--   approvals 4 (3 approved), waits p50 25 min, p95 30 + 0.85 x 10 = 38.5 min;
--   validations 4, failure rate 1/4; auto 2; retries 2; exhausted 1 (e1);
--   unknown 1 (e3); open dead letters 2 (e1, metrics-8), oldest 2 hours.
SELECT results_eq('SELECT * FROM idemgate.metrics()',
                  $$VALUES (12::bigint, 3::bigint, 0.25::float8, 1::bigint, 4::bigint, '25 minutes'::interval,
                            '38 minutes 30 seconds'::interval, 4::bigint, 0.25::float8, 2::bigint, 3::bigint, 2::bigint,
                            1::bigint, 1::bigint, 2::bigint, '2 hours'::interval, true)$$,
                  'the figures over 7 days');
-- A wider window takes in the old claim, duplicate and approval: 14 claims,
-- 4 duplicates, 5 decisions (4 approved), waits over 10..40 and 100 min:
-- p50 30 min, p95 40 + 0.8 x 60 = 88 min.
SELECT results_eq($$SELECT claims, duplicates, round(duplicate_rate::numeric, 4), approvals_decided,
                           human_approved, approval_wait_p50, approval_wait_p95
                      FROM idemgate.metrics(now() - interval '10 days')$$,
                  $$VALUES (14::bigint, 4::bigint, 0.2857, 5::bigint, 4::bigint, '30 minutes'::interval, '1 hour 28 minutes'::interval)$$,
                  'the figures over 10 days');
-- A window that starts now holds only what this transaction did.
SELECT results_eq($$SELECT claims, validations, retries FROM idemgate.metrics(now())$$,
                  $$VALUES (12::bigint, 4::bigint, 2::bigint)$$, 'a window that starts now');
-- The kill switch shows in actions_enabled.
SELECT idemgate.set_actions_enabled(false, 'metrics-operator', 'drill') \g /dev/null
SELECT is((SELECT actions_enabled FROM idemgate.metrics()), false, 'the kill switch shows');

-- prometheus(): the same figures over 7 days, exposition format. (The
-- number of running dispatchers depends on the test configuration; it
-- is checked against dispatcher_status() just below.)
SELECT is(regexp_replace(idemgate.prometheus(), 'idemgate_dispatchers_running \d+', 'idemgate_dispatchers_running N'),
          $prom$# HELP idemgate_claims Claim calls in the window (claimed, recovered or duplicate).
# TYPE idemgate_claims gauge
idemgate_claims{window="7d"} 12
# HELP idemgate_duplicates Claim calls answered duplicate (same key seen again) in the window.
# TYPE idemgate_duplicates gauge
idemgate_duplicates{window="7d"} 3
# HELP idemgate_duplicate_rate Duplicates divided by claims in the window (NaN without claims).
# TYPE idemgate_duplicate_rate gauge
idemgate_duplicate_rate{window="7d"} 0.25
# HELP idemgate_recovered Claim calls answered recovered (retryable or expired run taken over) in the window.
# TYPE idemgate_recovered gauge
idemgate_recovered{window="7d"} 1
# HELP idemgate_approvals_decided Approvals decided by a human (approve or reject) in the window.
# TYPE idemgate_approvals_decided gauge
idemgate_approvals_decided{window="7d"} 4
# HELP idemgate_approval_wait_p50_seconds Median time from approval request to decision over the window (NaN without decisions).
# TYPE idemgate_approval_wait_p50_seconds gauge
idemgate_approval_wait_p50_seconds{window="7d"} 1500
# HELP idemgate_approval_wait_p95_seconds 95th percentile of the time from approval request to decision over the window (NaN without decisions).
# TYPE idemgate_approval_wait_p95_seconds gauge
idemgate_approval_wait_p95_seconds{window="7d"} 2310
# HELP idemgate_validations Validations of model output recorded in the window.
# TYPE idemgate_validations gauge
idemgate_validations{window="7d"} 4
# HELP idemgate_validation_failure_rate Invalid validations divided by validations in the window (NaN without validations).
# TYPE idemgate_validation_failure_rate gauge
idemgate_validation_failure_rate{window="7d"} 0.25
# HELP idemgate_auto_approved Effects enqueued without a human (enqueue_effect calls) in the window.
# TYPE idemgate_auto_approved gauge
idemgate_auto_approved{window="7d"} 2
# HELP idemgate_human_approved Approvals granted by a human in the window.
# TYPE idemgate_human_approved gauge
idemgate_human_approved{window="7d"} 3
# HELP idemgate_retries Failed effect attempts that will be retried, in the window.
# TYPE idemgate_retries gauge
idemgate_retries{window="7d"} 2
# HELP idemgate_retry_exhausted Effects dead-lettered after their last attempt in the window.
# TYPE idemgate_retry_exhausted gauge
idemgate_retry_exhausted{window="7d"} 1
# HELP idemgate_run_attempts Run attempts that left processing in the window (completed, failed, or handed to an approval or the outbox).
# TYPE idemgate_run_attempts gauge
idemgate_run_attempts{window="7d",workflow="metrics-wf"} 8
# HELP idemgate_run_processing_p50_seconds Median processing time of a run attempt, from its claim to leaving processing, over the window (NaN without attempts): what a lease is sized from.
# TYPE idemgate_run_processing_p50_seconds gauge
idemgate_run_processing_p50_seconds{window="7d",workflow="metrics-wf"} 0
# HELP idemgate_run_processing_p95_seconds 95th percentile of the processing time of a run attempt over the window (NaN without attempts).
# TYPE idemgate_run_processing_p95_seconds gauge
idemgate_run_processing_p95_seconds{window="7d",workflow="metrics-wf"} 0
# HELP idemgate_run_processing_max_seconds Longest processing time of a run attempt over the window (NaN without attempts).
# TYPE idemgate_run_processing_max_seconds gauge
idemgate_run_processing_max_seconds{window="7d",workflow="metrics-wf"} 0
# HELP idemgate_run_retry_exhausted Runs failed for good after idemgate.max_run_attempts retryable failures in the window.
# TYPE idemgate_run_retry_exhausted gauge
idemgate_run_retry_exhausted{window="7d",workflow="metrics-wf"} 0
# HELP idemgate_unknown_effects Effects whose delivery is unknown now (check with the provider, then resolve_effect).
# TYPE idemgate_unknown_effects gauge
idemgate_unknown_effects 1
# HELP idemgate_dead_letters_open Dead letters not reinjected now.
# TYPE idemgate_dead_letters_open gauge
idemgate_dead_letters_open 2
# HELP idemgate_oldest_dead_letter_age_seconds Age of the oldest open dead letter (0 when there is none).
# TYPE idemgate_oldest_dead_letter_age_seconds gauge
idemgate_oldest_dead_letter_age_seconds 7200
# HELP idemgate_actions_enabled 1 when external sends are enabled (kill switch and setting both on), else 0.
# TYPE idemgate_actions_enabled gauge
idemgate_actions_enabled 0
# HELP idemgate_effects_pending Pending effects of the type now (due or not).
# TYPE idemgate_effects_pending gauge
idemgate_effects_pending{effect_type="metrics_auto"} 1
idemgate_effects_pending{effect_type="metrics_e1"} 0
idemgate_effects_pending{effect_type="metrics_e2"} 1
idemgate_effects_pending{effect_type="metrics_e3"} 0
idemgate_effects_pending{effect_type="metrics_e4"} 0
idemgate_effects_pending{effect_type="metrics_human"} 4
# HELP idemgate_effects_oldest_pending_seconds Age of the type's oldest pending effect (0 when none).
# TYPE idemgate_effects_oldest_pending_seconds gauge
idemgate_effects_oldest_pending_seconds{effect_type="metrics_auto"} 0
idemgate_effects_oldest_pending_seconds{effect_type="metrics_e1"} 0
idemgate_effects_oldest_pending_seconds{effect_type="metrics_e2"} 0
idemgate_effects_oldest_pending_seconds{effect_type="metrics_e3"} 0
idemgate_effects_oldest_pending_seconds{effect_type="metrics_e4"} 0
idemgate_effects_oldest_pending_seconds{effect_type="metrics_human"} 0
# HELP idemgate_effects_unknown Effects of the type whose delivery is unknown now.
# TYPE idemgate_effects_unknown gauge
idemgate_effects_unknown{effect_type="metrics_auto"} 0
idemgate_effects_unknown{effect_type="metrics_e1"} 0
idemgate_effects_unknown{effect_type="metrics_e2"} 0
idemgate_effects_unknown{effect_type="metrics_e3"} 1
idemgate_effects_unknown{effect_type="metrics_e4"} 0
idemgate_effects_unknown{effect_type="metrics_human"} 0
# HELP idemgate_effects_completed_total Effects of the type completed since installation (purge keeps the count).
# TYPE idemgate_effects_completed_total counter
idemgate_effects_completed_total{effect_type="metrics_auto"} 0
idemgate_effects_completed_total{effect_type="metrics_e1"} 0
idemgate_effects_completed_total{effect_type="metrics_e2"} 0
idemgate_effects_completed_total{effect_type="metrics_e3"} 0
idemgate_effects_completed_total{effect_type="metrics_e4"} 1
idemgate_effects_completed_total{effect_type="metrics_human"} 0
# HELP idemgate_effects_failed_total Effects of the type dead-lettered as failed since installation (purge keeps the count).
# TYPE idemgate_effects_failed_total counter
idemgate_effects_failed_total{effect_type="metrics_auto"} 0
idemgate_effects_failed_total{effect_type="metrics_e1"} 1
idemgate_effects_failed_total{effect_type="metrics_e2"} 1
idemgate_effects_failed_total{effect_type="metrics_e3"} 0
idemgate_effects_failed_total{effect_type="metrics_e4"} 0
idemgate_effects_failed_total{effect_type="metrics_human"} 0
# HELP idemgate_effects_paused 1 while the type is paused (pause_effect_type), else 0.
# TYPE idemgate_effects_paused gauge
idemgate_effects_paused{effect_type="metrics_auto"} 0
idemgate_effects_paused{effect_type="metrics_e1"} 0
idemgate_effects_paused{effect_type="metrics_e2"} 0
idemgate_effects_paused{effect_type="metrics_e3"} 0
idemgate_effects_paused{effect_type="metrics_e4"} 0
idemgate_effects_paused{effect_type="metrics_human"} 0
# HELP idemgate_dispatchers_running Running dispatchers that serve this database (0: HTTP effects are not sent).
# TYPE idemgate_dispatchers_running gauge
idemgate_dispatchers_running N
# HELP idemgate_alerts_firing Alerts of the idemgate.alerts view firing now; the value is the alert's count.
# TYPE idemgate_alerts_firing gauge
idemgate_alerts_firing{alert="dead_letters",severity="warning",subject="effect_type:metrics_e1"} 1
idemgate_alerts_firing{alert="kill_switch_off",severity="info",subject="kill_switch"} 1
idemgate_alerts_firing{alert="terminal_failure",severity="warning",subject="workflow:metrics-wf"} 1
idemgate_alerts_firing{alert="unknown_effects",severity="warning",subject="effect_type:metrics_e3"} 1
# HELP idemgate_alert_first_keys The first keys of the runs a firing alert is about (label keys); the value is the alert's count.
# TYPE idemgate_alert_first_keys gauge
idemgate_alert_first_keys{alert="terminal_failure",subject="workflow:metrics-wf",keys="metrics-8"} 1
# HELP idemgate_reviews_requested_total enqueue_effect calls turned into an approval request by the type's review_sample, since its policy was set.
# TYPE idemgate_reviews_requested_total counter
$prom$,
          'prometheus: the same figures');
SELECT ok(substring(idemgate.prometheus() FROM 'idemgate_dispatchers_running (\d+)')::int
          = (SELECT count(*) FROM idemgate.dispatcher_status() WHERE database = current_database()),
          'the dispatchers gauge matches dispatcher_status()');
-- Every sample line is "name{labels} value", every family has HELP and TYPE.
SELECT results_eq($$SELECT count(*) FILTER (WHERE l ~ '^# HELP idemgate_[a-z0-9_]+ .+$'),
                           count(*) FILTER (WHERE l ~ '^# TYPE idemgate_[a-z0-9_]+ (gauge|counter)$'),
                           count(*) FILTER (WHERE l ~ '^idemgate_[a-z0-9_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (NaN|-?[0-9.e+-]+)$'),
                           count(*)
                      FROM regexp_split_to_table(rtrim(idemgate.prometheus(), E'\n'), E'\n') AS l$$,
                  $$VALUES (32::bigint, 32::bigint, 64::bigint, 128::bigint)$$,
                  '32 HELP, 32 TYPE, 64 samples, 128 lines');
-- No family is a summary or a histogram, so no sample may carry their
-- reserved labels (promtool check metrics flags a "quantile" label on a
-- gauge): the approval waits are two gauges, p50 and p95.
SELECT is_empty($$SELECT l FROM regexp_split_to_table(idemgate.prometheus(), E'\n') l
                   WHERE l ~ '^idemgate_.*[{,](quantile|le)="'$$,
                'no quantile or le label outside a summary or histogram');

-- Bad arguments.
SELECT throws_ok('SELECT * FROM idemgate.metrics(NULL)', '22004', 'argument "since" must not be NULL', 'since NULL');
SELECT throws_ok('SELECT * FROM idemgate.metrics(now() + interval ''1 hour'')', '22023', 'argument "since" must not be in the future',
                 'since in the future');

-- Privileges: reader may read metrics and prometheus, a client may not.
CREATE ROLE metrics_reader;
CREATE ROLE metrics_client;
SELECT idemgate.grant_role('metrics_reader', 'reader'), idemgate.grant_role('metrics_client', 'client') \g /dev/null
SELECT function_privs_are('idemgate', f, a, r, p, r || ' on ' || f) FROM (VALUES
  ('metrics_reader', 'metrics', ARRAY['timestamp with time zone'], ARRAY['EXECUTE']),
  ('metrics_reader', 'prometheus', ARRAY[]::text[], ARRAY['EXECUTE']),
  ('metrics_client', 'metrics', ARRAY['timestamp with time zone'], ARRAY[]::text[]),
  ('metrics_client', 'prometheus', ARRAY[]::text[], ARRAY[]::text[])
) AS t(r, f, a, p);
SELECT is(pg_temp.as_role('metrics_reader', 'SELECT claims >= 0 FROM idemgate.metrics()'), 'true', 'the reader reads metrics');
SELECT is(pg_temp.as_role('metrics_reader', $q$SELECT idemgate.prometheus() LIKE '# HELP idemgate_claims %'$q$), 'true',
          'the reader reads prometheus');
SELECT throws_ok($$SELECT pg_temp.as_role('metrics_client', 'SELECT idemgate.prometheus()')$$, '42501',
                 'permission denied for function prometheus', 'a client may not');

SELECT * FROM finish();
ROLLBACK;
