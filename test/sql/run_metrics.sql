-- run_metrics(since) and its Prometheus families (docs/operations.md,
-- "Run processing times"): per workflow, the attempts that left
-- processing, their processing time from the claim (p50, p95, max) and the
-- runs whose retries ran out; purge keeps the figures.
--
-- One transaction over empty tables, rolled back. now() is constant
-- inside, so each attempt's claim is moved back in time (lease_started_at)
-- before the change that ends it: the processing times are exact. pgTAP.
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
-- started(k, ago): run k's current attempt was claimed ago before now.
CREATE FUNCTION pg_temp.started(k text, ago interval) RETURNS void LANGUAGE sql AS $$
  UPDATE idemgate.runs SET lease_started_at = now() - ago WHERE idempotency_key = k
$$;
-- fail_now fails run k as its lease holder (retryable or not).
CREATE FUNCTION pg_temp.fail_now(k text, retryable boolean) RETURNS text LANGUAGE sql AS $$
  SELECT idemgate.fail(k, lease_owner, version, 'timeout', 'provider slow', retryable)
    FROM idemgate.runs WHERE idempotency_key = k
$$;
\i test/sql/include/as_role.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.run_metrics_rollup,
           idemgate.metrics_rollup, idemgate.effect_type_rollup IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.alert_state, idemgate.run_metrics_rollup,
         idemgate.metrics_rollup, idemgate.effect_type_rollup;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
SELECT * FROM no_plan();

SELECT is_empty($$SELECT * FROM idemgate.run_metrics()$$, 'no runs: no rows');

-- Workflow invoices: six attempts of 10, 20, 40, 30, 60 and 100 seconds,
-- ended every way a run leaves processing.
SELECT pg_temp.rows_are($$count(*) FROM unnest(ARRAY['rm-1', 'rm-2', 'rm-3', 'rm-4']) AS k, idemgate.claim(k, '{}', '10 minutes', 'invoices') c$$,
                        '(4)');
-- cas_transition to completed after 10 s.
SELECT pg_temp.started('rm-1', '10 seconds') \g /dev/null
SELECT pg_temp.rows_are($$idemgate.cas_transition('rm-1', lease_owner, version, 'completed', '{"ok": true}') FROM idemgate.runs WHERE idempotency_key = 'rm-1'$$,
                        '(1)');
SELECT pg_temp.rows_are($$details->>'workflow', details->'processing_ms' FROM idemgate.events WHERE idempotency_key = 'rm-1'$$,
                        '(invoices,10000)');
-- Three retryable failures after 20, 40 and 30 s: the third runs out of
-- attempts (idemgate.max_run_attempts = 3).
SELECT pg_temp.started('rm-2', '20 seconds') \g /dev/null
SELECT pg_temp.rows_are($$pg_temp.fail_now('rm-2', true)$$, '(failed_retryable)');
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('rm-2', '{}', '10 minutes', 'invoices')$$, '(recovered)');
SELECT pg_temp.started('rm-2', '40 seconds') \g /dev/null
SELECT pg_temp.rows_are($$pg_temp.fail_now('rm-2', true)$$, '(failed_retryable)');
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('rm-2', '{}', '10 minutes', 'invoices')$$, '(recovered)');
SELECT pg_temp.started('rm-2', '30 seconds') \g /dev/null
SELECT pg_temp.rows_are($$pg_temp.fail_now('rm-2', true)$$, '(failed_terminal)');
-- The fail events carry the error class and the failure count (never the
-- error text), and mark the exhausted retries.
SELECT pg_temp.rows_are($$details->'to', details->'processing_ms', details->'info' FROM idemgate.events
                          WHERE idempotency_key = 'rm-2' AND kind = 'state_changed' ORDER BY id$$,
                        '("""failed_retryable""",20000,"{""failures"": 1, ""retryable"": true, ""error_class"": ""timeout""}")',
                        '("""failed_retryable""",40000,"{""failures"": 2, ""retryable"": true, ""error_class"": ""timeout""}")',
                        '("""failed_terminal""",30000,"{""failures"": 3, ""retryable"": true, ""error_class"": ""timeout"", ""retry_exhausted"": true}")');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.events WHERE kind = 'state_changed' AND details::text LIKE '%provider slow%'$$, '(0)');
-- Handed to a human after 60 s, to the outbox after 100 s.
SELECT pg_temp.started('rm-3', '60 seconds') \g /dev/null
SELECT pg_temp.rows_are($$version FROM idemgate.request_approval('rm-3', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'rm-3'), 0,
                                                                 '{"type": "mail", "target": "a", "payload": {}}')$$, '(1)');
SELECT pg_temp.started('rm-4', '100 seconds') \g /dev/null
SELECT pg_temp.rows_are($$version FROM idemgate.enqueue_effect('rm-4', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'rm-4'), 0,
                                                               '{"type": "mail", "target": "b", "payload": {}}')$$, '(1)');
SELECT pg_temp.rows_are($$kind, details->'processing_ms' FROM idemgate.events
                          WHERE idempotency_key IN ('rm-3', 'rm-4') ORDER BY id$$,
                        '(approval_requested,60000)', '(effects_enqueued,100000)');
-- A run without a workflow: 5 s.
SELECT pg_temp.rows_are($$outcome FROM idemgate.claim('rm-x', '{}')$$, '(claimed)');
SELECT pg_temp.started('rm-x', '5 seconds') \g /dev/null
SELECT pg_temp.rows_are($$idemgate.cas_transition('rm-x', lease_owner, version, 'completed') FROM idemgate.runs WHERE idempotency_key = 'rm-x'$$,
                        '(1)');
-- Seven attempts; changes that do not leave processing are not attempts.
SELECT pg_temp.rows_are($$count(*) FROM idemgate.events WHERE details ? 'processing_ms'$$, '(7)');

-- Sorted, invoices took 10, 20, 30, 40, 60, 100 s: p50 35 s, p95 90 s
-- (percentile_cont), max 100 s; one run's retries ran out.
CREATE TEMP TABLE before_purge AS SELECT * FROM idemgate.run_metrics();
SELECT pg_temp.rows_are($$* FROM before_purge$$,
                        '(invoices,6,"@ 35 secs","@ 1 min 30 secs","@ 1 min 40 secs",1)',
                        '(,1,"@ 5 secs","@ 5 secs","@ 5 secs",0)');
-- The window: an attempt before since is not counted.
SELECT pg_temp.rows_are($$* FROM idemgate.run_metrics(now())$$,
                        '(invoices,6,"@ 35 secs","@ 1 min 30 secs","@ 1 min 40 secs",1)',
                        '(,1,"@ 5 secs","@ 5 secs","@ 5 secs",0)');
UPDATE idemgate.events SET at = now() - interval '2 days' WHERE idempotency_key = 'rm-x';
SELECT pg_temp.rows_are($$* FROM idemgate.run_metrics(now() - interval '1 day')$$,
                        '(invoices,6,"@ 35 secs","@ 1 min 30 secs","@ 1 min 40 secs",1)');
UPDATE idemgate.events SET at = now() WHERE idempotency_key = 'rm-x';

-- prometheus(): the same figures, in seconds, per workflow ("" for none).
SELECT is((SELECT string_agg(l, E'\n' ORDER BY n) FROM regexp_split_to_table(idemgate.prometheus(), E'\n') WITH ORDINALITY AS t(l, n)
            WHERE l LIKE 'idemgate_run_%' OR l LIKE '# TYPE idemgate_run_%' OR l LIKE 'idemgate_retry_exhausted%'),
          'idemgate_retry_exhausted{window="7d"} 0
# TYPE idemgate_run_attempts gauge
idemgate_run_attempts{window="7d",workflow="invoices"} 6
idemgate_run_attempts{window="7d",workflow=""} 1
# TYPE idemgate_run_processing_p50_seconds gauge
idemgate_run_processing_p50_seconds{window="7d",workflow="invoices"} 35
idemgate_run_processing_p50_seconds{window="7d",workflow=""} 5
# TYPE idemgate_run_processing_p95_seconds gauge
idemgate_run_processing_p95_seconds{window="7d",workflow="invoices"} 90
idemgate_run_processing_p95_seconds{window="7d",workflow=""} 5
# TYPE idemgate_run_processing_max_seconds gauge
idemgate_run_processing_max_seconds{window="7d",workflow="invoices"} 100
idemgate_run_processing_max_seconds{window="7d",workflow=""} 5
# TYPE idemgate_run_retry_exhausted gauge
idemgate_run_retry_exhausted{window="7d",workflow="invoices"} 1
idemgate_run_retry_exhausted{window="7d",workflow=""} 0',
          'prometheus(): the runs'' figures beside the effects'' retry exhaustion');

-- Purge keeps the figures: rm-1 and rm-x (completed) and rm-2 (its dead
-- letter purged first) are deleted with their events; run_metrics answers
-- the same from idemgate.run_metrics_rollup.
UPDATE idemgate.dead_letters SET reinjected_at = now() WHERE idempotency_key = 'rm-2';
UPDATE idemgate.runs SET updated_at = now() - interval '40 days', created_at = now() - interval '40 days'
 WHERE idempotency_key IN ('rm-1', 'rm-2', 'rm-x');
SELECT pg_temp.rows_are($$idemgate.purge('30 days')$$, '(3)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.events WHERE idempotency_key IN ('rm-1', 'rm-2', 'rm-x')$$, '(0)');
SELECT pg_temp.rows_are($$workflow, (SELECT array_agg(x ORDER BY x) FROM unnest(processing_seconds) x), retry_exhausted
                          FROM idemgate.run_metrics_rollup ORDER BY workflow NULLS LAST$$,
                        '(invoices,"{10,20,30,40}",1)', '(,{5},0)');
SELECT results_eq($$SELECT * FROM idemgate.run_metrics()$$, $$SELECT * FROM before_purge$$, 'the same figures after the purge');
-- A second purge of the same hour adds to the hour's row.
SELECT pg_temp.rows_are($$idemgate.cas_transition('rm-3', lease_owner, version, 'failed_terminal') FROM idemgate.runs WHERE idempotency_key = 'rm-3'$$,
                        '(2)');
SELECT pg_temp.rows_are($$count(*) FROM idemgate.run_metrics()$$, '(2)');
UPDATE idemgate.dead_letters SET reinjected_at = now() WHERE idempotency_key = 'rm-3';
UPDATE idemgate.runs SET updated_at = now() - interval '40 days', created_at = now() - interval '40 days'
 WHERE idempotency_key = 'rm-3';
SELECT pg_temp.rows_are($$idemgate.purge('30 days')$$, '(1)');
SELECT pg_temp.rows_are($$workflow, (SELECT array_agg(x ORDER BY x) FROM unnest(processing_seconds) x)
                          FROM idemgate.run_metrics_rollup ORDER BY workflow NULLS LAST$$,
                        '(invoices,"{10,20,30,40,60}")', '(,{5})');
SELECT results_eq($$SELECT * FROM idemgate.run_metrics()$$, $$SELECT * FROM before_purge$$, 'still the same figures');

-- Bad input.
SELECT throws_ok($$SELECT * FROM idemgate.run_metrics(NULL)$$, '22004', 'argument "since" must not be NULL', 'since NULL');
SELECT throws_ok($$SELECT * FROM idemgate.run_metrics(now() + interval '1 hour')$$, '22023',
                 'argument "since" must not be in the future', 'since in the future');

-- Privileges: readers and operators, not clients.
CREATE ROLE run_metrics_reader;
CREATE ROLE run_metrics_client;
SELECT idemgate.grant_role('run_metrics_reader', 'reader') \g /dev/null
SELECT idemgate.grant_role('run_metrics_client', 'client') \g /dev/null
SELECT is(pg_temp.as_role('run_metrics_reader', 'SELECT attempts FROM idemgate.run_metrics() WHERE workflow = ''invoices'''), '6',
          'a reader reads run_metrics');
SELECT throws_ok($$SELECT pg_temp.as_role('run_metrics_client', 'SELECT count(*) FROM idemgate.run_metrics()')$$, '42501',
                 'permission denied for function run_metrics', 'a client may not');
SELECT throws_ok($$SELECT pg_temp.as_role('run_metrics_reader', 'SELECT count(*) FROM idemgate.run_metrics_rollup')$$, '42501',
                 'permission denied for table run_metrics_rollup', 'nor read the rollup');
SELECT idemgate.revoke_role('run_metrics_reader', 'reader') \g /dev/null
SELECT idemgate.revoke_role('run_metrics_client', 'client') \g /dev/null
DROP ROLE run_metrics_reader;
DROP ROLE run_metrics_client;

SELECT * FROM finish();
ROLLBACK;
