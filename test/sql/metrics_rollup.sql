-- metrics(since) answers the same after purge as before it (docs/operations.md): purge
-- adds what metrics() counts of the rows it deletes to an hourly rollup
-- (idemgate.metrics_rollup), and the per-type Prometheus counters keep the
-- completed and failed effects of purged runs (idemgate.effect_type_rollup).
--
-- One transaction over emptied tables, rolled back (the dispatcher waits on
-- our locks). The history is spread over several hours with UPDATEs; every
-- run is finished, then made old enough for purge('1 day').
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
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
CREATE FUNCTION pg_temp.auto(k text, t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  PERFORM idemgate.enqueue_effect(k, c.lease_owner, c.version,
                                  jsonb_build_object('type', t, 'target', k, 'payload', '{}'));
  RETURN c.outcome;
END $$;
CREATE FUNCTION pg_temp.decide(k text, decision text, waited interval) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record; a record; d record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  PERFORM idemgate.record_validation(k, c.lease_owner, c.version, '{"a": 1}', '{"required": ["b"]}');
  PERFORM idemgate.record_validation(k, c.lease_owner, c.version, '{"b": 1}', '{"required": ["b"]}');
  SELECT * INTO a FROM idemgate.request_approval(k, c.lease_owner, c.version,
                        jsonb_build_object('type', 'mr_human', 'target', k, 'payload', '{}'));
  SELECT * INTO d FROM idemgate.consume_approval(a.token, decision, 'mr-approver');
  UPDATE idemgate.approvals SET created_at = consumed_at - waited WHERE approval_id = a.approval_id;
  RETURN d.outcome;
END $$;

BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.metrics_rollup,
           idemgate.effect_type_rollup IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.alert_state, idemgate.metrics_rollup, idemgate.effect_type_rollup;

-- History: 4 automatic runs (3 delivered, one after a retry; 1 rejected by
-- the provider), 3 human approvals (2 approved after 10 and 50 minutes,
-- 1 rejected after 30), 2 duplicates, 1 recovery, 6 validations (3 invalid).
SELECT pg_temp.auto('mr-' || i, 'mr_mail') FROM generate_series(1, 4) i;
SELECT pg_temp.attempt('mr_mail', 'unavailable'), pg_temp.attempt('mr_mail', NULL),
       pg_temp.attempt('mr_mail', NULL), pg_temp.attempt('mr_mail', NULL), pg_temp.attempt('mr_mail', 'rejected');
SELECT pg_temp.decide('mr-h1', 'approve', '10 minutes'), pg_temp.decide('mr-h2', 'approve', '50 minutes'),
       pg_temp.decide('mr-h3', 'reject', '30 minutes');
SELECT pg_temp.attempt('mr_human', NULL), pg_temp.attempt('mr_human', NULL);
SELECT outcome FROM idemgate.claim('mr-1', '{}');
SELECT outcome FROM idemgate.claim('mr-h1', '{}');
-- a recovery: a retryable failure, claimed again, then finished
SELECT lease_owner AS o, version AS v FROM idemgate.claim('mr-r', '{}') \gset
SELECT idemgate.fail('mr-r', :'o', :v, 'transient', 'timeout', true);
SELECT outcome, lease_owner AS o, version AS v FROM idemgate.claim('mr-r', '{}') \gset
SELECT :'outcome' AS outcome, idemgate.cas_transition('mr-r', :'o', :v, 'completed') IS NOT NULL AS completed;
-- Spread over hours: each key's rows move back by its own amount.
CREATE TEMP TABLE shift (k text PRIMARY KEY, back interval);
INSERT INTO shift VALUES ('mr-1', '5 hours'), ('mr-2', '4 hours 30 minutes'), ('mr-3', '3 hours'),
  ('mr-4', '26 hours'), ('mr-h1', '2 hours 10 minutes'), ('mr-h2', '50 minutes'), ('mr-h3', '9 days'),
  ('mr-r', '1 hour 5 minutes');
UPDATE idemgate.events e SET at = e.at - s.back FROM shift s WHERE e.idempotency_key = s.k;
UPDATE idemgate.runs r SET created_at = r.created_at - s.back FROM shift s WHERE r.idempotency_key = s.k;
UPDATE idemgate.approvals a SET created_at = a.created_at - s.back, consumed_at = a.consumed_at - s.back
  FROM shift s WHERE a.idempotency_key = s.k;
SELECT state, count(*) FROM idemgate.runs GROUP BY state ORDER BY state;

CREATE TEMP TABLE windows (name text, since timestamptz);
INSERT INTO windows VALUES ('7 days', now() - interval '7 days'), ('30 days', now() - interval '30 days'),
  ('on the hour', date_trunc('hour', now() - interval '3 hours', 'UTC')),
  ('24 hours', now() - interval '24 hours'), ('now', now());
CREATE TEMP TABLE before AS SELECT w.name, w.since AS w_since, m.* FROM windows w, idemgate.metrics(w.since) m;
CREATE TEMP TABLE before_types AS SELECT * FROM idemgate.effect_type_metrics();
SELECT name, claims, duplicates, duplicate_rate, recovered, approvals_decided, approval_wait_p50,
       approval_wait_p95, validations, validation_failure_rate, auto_approved, human_approved,
       retries, retry_exhausted
  FROM before ORDER BY w_since;
SELECT effect_type, pending, unknown, completed_total, failed_total FROM before_types
 WHERE effect_type LIKE 'mr\_%' ORDER BY 1;

-- Purge everything finished. mr-4 stays: its effect failed (a dead letter),
-- so the run is still approved and its rows stay live.
-- (every run here was created at least 50 minutes ago: shift above)
UPDATE idemgate.runs SET updated_at = now() - interval '2 days';
SELECT idemgate.purge('10 minutes') AS runs_purged;
SELECT count(*) AS runs_left, (SELECT count(*) FROM idemgate.events WHERE idempotency_key IS NOT NULL) AS keyed_events_left
  FROM idemgate.runs;
-- The rollup: one row per UTC hour that counted something (which hours
-- depends on the clock), adding up to the purged runs' figures.
SELECT count(*) >= 4 AS several_hours, bool_and(hour = date_trunc('hour', first_at, 'UTC')
                                               AND hour = date_trunc('hour', last_at, 'UTC')) AS bounded,
       sum(claimed) AS claimed, sum(duplicates) AS duplicates, sum(recovered) AS recovered,
       sum(approvals_decided) AS approvals_decided, sum(validations) AS validations,
       sum(auto_approved) AS auto_approved, sum(retries) AS retries, sum(retry_exhausted) AS retry_exhausted,
       sum(cardinality(approval_waits)) AS waits
  FROM idemgate.metrics_rollup;
SELECT * FROM idemgate.effect_type_rollup ORDER BY effect_type;

-- The same answers after the purge, for every window.
CREATE TEMP TABLE after AS SELECT w.name, w.since AS w_since, m.* FROM windows w, idemgate.metrics(w.since) m;
SELECT b.name, (b.claims, b.duplicates, b.duplicate_rate, b.recovered, b.approvals_decided,
                b.approval_wait_p50, b.approval_wait_p95, b.validations, b.validation_failure_rate,
                b.auto_approved, b.human_approved, b.retries, b.retry_exhausted)
               IS NOT DISTINCT FROM
               (a.claims, a.duplicates, a.duplicate_rate, a.recovered, a.approvals_decided,
                a.approval_wait_p50, a.approval_wait_p95, a.validations, a.validation_failure_rate,
                a.auto_approved, a.human_approved, a.retries, a.retry_exhausted) AS same
  FROM before b JOIN after a USING (name) ORDER BY b.w_since;
-- The per-type counters too (pending and unknown are the backlog now: 0).
SELECT b.effect_type, (b.completed_total, b.failed_total) = (a.completed_total, a.failed_total) AS same_counters
  FROM before_types b JOIN idemgate.effect_type_metrics() a USING (effect_type)
 WHERE effect_type LIKE 'mr\_%' ORDER BY 1;
-- A second purge changes nothing more.
SELECT idemgate.purge('1 day') AS runs_purged;
SELECT count(*) AS differing FROM (SELECT * FROM after EXCEPT SELECT w.name, w.since, m.* FROM windows w, idemgate.metrics(w.since) m) d;
ROLLBACK;
