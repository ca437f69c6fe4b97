-- sql/1.1--1.2/40_alerts_seeds.sql
--
-- Nothing fails silently, alerts name the business event, durations to
-- size leases by, and events that carry what the seeds list (README.md
-- "Operations"; docs/operations.md "Alerts", "Run processing times", "The
-- audit trail"). C: src/runs.c, src/claim_direct.c, src/payload_mismatches.c,
-- src/alerts.c, src/metrics.c, src/endpoints.c.

-- ---------------------------------------------------------------------------
-- Runs: where the trigger came from, and what a takeover took the run from.
-- Both are nullable without a default, so adding them rewrites nothing and
-- the claim's direct path writes them without a default to evaluate.
ALTER TABLE idemgate.runs ADD COLUMN origin text, ADD COLUMN recovered_from text;
COMMENT ON COLUMN idemgate.runs.origin IS
'Where the first claim''s trigger came from (claim''s origin: a webhook, schedule, error trigger, re-run...), NULL when not given';
COMMENT ON COLUMN idemgate.runs.recovered_from IS
'The state the last takeover took the run from: processing (its lease had expired) or failed_retryable (a redelivery); NULL when never taken over';

-- The stalled_runs alert looks for runs in processing or failed_retryable
-- whose last change is old. Only those two states are indexed, so the
-- index holds the work in flight, not the ledger. Its cost: a claim adds
-- one entry (bench/README.md), and a change of state is no longer a HOT
-- update (the index's predicate reads state).
CREATE INDEX runs_stalled_idx ON idemgate.runs (updated_at)
    WHERE state IN ('processing', 'failed_retryable');

-- claim gains origin (SPEC: optional arguments may be added at the end).
-- A function's arguments cannot change in place: it is dropped and
-- created again, with its comment and privileges, and its bundle entries
-- renamed; 99_release_grants.sql gives it back to the roles that hold
-- client or operator.
DROP FUNCTION idemgate.claim(text, jsonb, interval, text, uuid);
CREATE FUNCTION idemgate.claim(key text, payload jsonb, lease interval DEFAULT '5 minutes',
                               workflow text DEFAULT NULL, owner uuid DEFAULT NULL,
                               origin text DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim';
COMMENT ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid, text) IS
'Atomically claim an idempotency key: claimed (new key), recovered (retryable or expired lease taken over) or duplicate (earlier state and result); IG001 when the payload differs. origin (where the trigger came from) is kept on the run and in the recovered and duplicate events';
REVOKE ALL ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid, text) FROM PUBLIC;
UPDATE idemgate.bundle_members SET fn = 'idemgate.claim(text,jsonb,interval,text,uuid,text)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.claim(text,jsonb,interval,text,uuid)';

COMMENT ON FUNCTION idemgate.claim(jsonb) IS
'claim() with its arguments in one JSON object {key, payload, lease, workflow, owner, origin}: the robust form for n8n''s Postgres node';

-- What happened to each key: the first claim's entry also shows its
-- origin and the input's hash (hex SHA-256 of the payload, the value the
-- claim compares); the rest is 1.1's definition.
CREATE OR REPLACE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key, 'origin', r.origin,
               'payload_hash', pg_catalog.encode(r.payload_hash, 'hex'))) AS details,
           NULL::uuid AS effect_id
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details, e.effect_id
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL
    UNION ALL
    SELECT o.idempotency_key, o.updated_at, 'effect_completed', NULL,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'provider_id', o.provider_id, 'status', o.last_status, 'attempt', o.attempts)),
           o.effect_id
      FROM idemgate.outbox o
     WHERE o.state OPERATOR(pg_catalog.=) 'completed'
    UNION ALL
    -- A run with effects completes only when its last effect is settled.
    SELECT r.idempotency_key, r.updated_at, 'state_changed', NULL,
           pg_catalog.jsonb_build_object('from', 'approved', 'to', 'completed', 'version', r.version),
           NULL
      FROM idemgate.runs r
     WHERE r.state OPERATOR(pg_catalog.=) 'completed'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key);

-- ---------------------------------------------------------------------------
-- No internal host names in events a reader sees: endpoint_registered now
-- records a fingerprint of the host (the first 16 hex digits of its
-- SHA-256: two registrations with the same fingerprint point at the same
-- host), not the host. Events written before the update are rewritten the
-- same way.
UPDATE idemgate.events
   SET details = (details OPERATOR(pg_catalog.-) 'host')
                 OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('host_sha256',
                     pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(
                         pg_catalog.convert_to(details OPERATOR(pg_catalog.->>) 'host', 'UTF8')), 'hex'), 16))
 WHERE kind OPERATOR(pg_catalog.=) 'endpoint_registered'
   AND details OPERATOR(pg_catalog.?) 'host';

-- ---------------------------------------------------------------------------
-- Payload mismatches (IG001): the claim's transaction rolls back, so they
-- are counted in shared memory (src/payload_mismatches.c), one row per
-- workflow with mismatches since the server started; lost at a restart.
CREATE FUNCTION idemgate.payload_mismatches()
RETURNS TABLE(workflow text, mismatches bigint, first_at timestamptz, last_at timestamptz,
              first_keys text[], firing boolean)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_payload_mismatches';
COMMENT ON FUNCTION idemgate.payload_mismatches() IS
'Claims refused with IG001 (same key, different payload) per workflow since the server started (their transactions rolled back; counted in shared memory, so only with shared_preload_libraries, and lost at a restart): mismatches, first and last time, the first keys, and firing (the last one less than an hour ago: the payload_mismatch alert)';
REVOKE ALL ON FUNCTION idemgate.payload_mismatches() FROM PUBLIC;

CREATE FUNCTION idemgate.clear_payload_mismatches() RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_clear_payload_mismatches';
COMMENT ON FUNCTION idemgate.clear_payload_mismatches() IS
'Forget this database''s payload mismatch counts once they are investigated (the payload_mismatch alert clears at once; not undone by a rollback); audited as payload_mismatches_cleared. Returns the number of mismatches forgotten';
REVOKE ALL ON FUNCTION idemgate.clear_payload_mismatches() FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Run processing times per workflow (src/metrics.c). metrics() keeps its
-- 1.1 row type: a column added to a function's result changes its type
-- (DROP and CREATE), which would break every view or client that reads it
-- by position, so these figures get a function of their own, read by
-- prometheus() as well.
CREATE TABLE idemgate.run_metrics_rollup (
    hour               timestamptz NOT NULL,
    workflow           text,
    first_at           timestamptz NOT NULL,
    last_at            timestamptz NOT NULL,
    processing_seconds double precision[] NOT NULL DEFAULT '{}',
    retry_exhausted    bigint NOT NULL DEFAULT 0,
    UNIQUE NULLS NOT DISTINCT (hour, workflow)
);
COMMENT ON TABLE idemgate.run_metrics_rollup IS
'What run_metrics() counted from purged runs, per UTC hour and workflow (NULL: runs without one): the processing times in seconds and the runs whose retries ran out; first_at/last_at bound the times counted. Written only by purge';
SELECT pg_catalog.pg_extension_config_dump('idemgate.run_metrics_rollup', '');
REVOKE ALL ON idemgate.run_metrics_rollup FROM PUBLIC;

CREATE FUNCTION idemgate.run_metrics(since timestamptz DEFAULT pg_catalog.now() - interval '7 days')
RETURNS TABLE(workflow text, attempts bigint, processing_p50 interval, processing_p95 interval,
              processing_max interval, retry_exhausted bigint)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_run_metrics';
COMMENT ON FUNCTION idemgate.run_metrics(timestamptz) IS
'Per workflow (NULL: runs without one), over [since, now()]: attempts that left processing (completed, failed, or handed to an approval or the outbox), their processing time from the claim (p50, p95, max: what a lease is sized from), and runs failed for good after idemgate.max_run_attempts retryable failures (beside metrics().retry_exhausted, which counts effects); purge keeps the figures';
REVOKE ALL ON FUNCTION idemgate.run_metrics(timestamptz) FROM PUBLIC;
ALTER FUNCTION idemgate.run_metrics(timestamptz) SET jit = off;

COMMENT ON FUNCTION idemgate.prometheus() IS
'metrics() over the last 7 days in the Prometheus text exposition format: gauges named idemgate_*, windowed ones labelled window="7d"; per workflow (label workflow) idemgate_run_attempts, _run_processing_p50_seconds, _p95_seconds, _max_seconds, idemgate_run_retry_exhausted; per effect type (label effect_type) idemgate_effects_pending, _oldest_pending_seconds, _unknown, _completed_total, _failed_total, _paused; idemgate_dispatchers_running; idemgate_alerts_firing per alert and idemgate_alert_first_keys for alerts about runs';

-- ---------------------------------------------------------------------------
-- Alerts. alert_state keeps the first keys published (a cleared alert's
-- NOTIFY payload carries what it said last).
ALTER TABLE idemgate.alert_state ADD COLUMN keys text[];
COMMENT ON COLUMN idemgate.alert_state.keys IS
'The first keys of the runs the alert was about when last published (stalled_runs, terminal_failure, lease_takeovers, payload_mismatch), NULL for others';

-- The 1.1 alerts plus
--   stalled_runs      per workflow: runs left processing with an expired
--                     lease, or failed_retryable and not redelivered, for
--                     longer than idemgate.alert_stalled_after (15 min);
--   terminal_failure  per workflow: runs failed for good in the last hour
--                     (open dead letters), at once;
--   lease_takeovers   per workflow: more than idemgate.alert_lease_takeovers
--                     (5) takeovers of expired leases in 10 minutes;
--   payload_mismatch  per workflow: claims refused with IG001 in the last
--                     hour (payload_mismatches()).
-- Each names the workflow and the first keys (at most 3, each cut to 64
-- characters: IDEMGATE_ALERT_FIRST_KEYS and IDEMGATE_ALERT_KEY_CHARS in
-- src/idemgate_limits.h), in its message and in the new column keys. The
-- silence check keeps the predicate of events_claim_workflow_idx.
CREATE OR REPLACE VIEW idemgate.alert_instances AS
WITH RECURSIVE settings AS (
    SELECT COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_failures', true), '')::bigint,
                    10) AS max_failures,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_stuck_after', true), '')::interval,
                    interval '15 minutes') AS stuck_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_dispatcher_missing_after', true), '')::interval,
                    interval '1 minute') AS missing_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.actions_enabled', true), '')::boolean,
                    true) AS setting_enabled,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_stalled_after', true), '')::interval,
                    interval '15 minutes') AS stalled_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_lease_takeovers', true), '')::bigint,
                    5) AS max_takeovers
), failures AS (
    -- Effects with a failed attempt in the last 10 minutes, still not delivered.
    SELECT 'effect'::text AS what, o.effect_type AS grp,
           pg_catalog.count(DISTINCT e.effect_id) AS n, pg_catalog.min(e.at) AS since
      FROM idemgate.events e
      JOIN idemgate.outbox o ON o.effect_id = e.effect_id
     WHERE e.kind = 'effect_failed'
       AND e.at > pg_catalog.now() - interval '10 minutes'
       AND o.state <> 'completed'
     GROUP BY o.effect_type
    UNION ALL
    -- Runs that failed for good in the last 10 minutes (a failed_terminal run
    -- is dead-lettered; a rejection is a decision and leaves no dead letter).
    SELECT 'run', r.workflow,
           pg_catalog.count(DISTINCT e.idempotency_key), pg_catalog.min(e.at)
      FROM idemgate.events e
      LEFT JOIN idemgate.runs r ON r.idempotency_key = e.idempotency_key
     WHERE e.kind = 'dead_lettered' AND e.effect_id IS NULL
       AND e.at > pg_catalog.now() - interval '10 minutes'
       AND r.state IS DISTINCT FROM 'completed'
     GROUP BY r.workflow
), dead AS (
    SELECT d.kind AS what,
           CASE WHEN d.kind = 'effect' THEN d.effect_type ELSE r.workflow END AS grp,
           pg_catalog.count(*) AS n, pg_catalog.min(d.dead_at) AS since
      FROM idemgate.dead_letters d
      LEFT JOIN idemgate.runs r ON d.kind = 'run' AND r.idempotency_key = d.idempotency_key
     WHERE d.reinjected_at IS NULL
       AND d.dead_at < pg_catalog.now() - interval '1 hour'
     GROUP BY 1, 2
), unknown AS (
    SELECT o.effect_type AS grp, pg_catalog.count(*) AS n, pg_catalog.min(o.updated_at) AS since
      FROM idemgate.outbox o
     WHERE o.state = 'unknown'
     GROUP BY o.effect_type
), watched AS (
    SELECT w.workflow, w.expected_interval,
           GREATEST(w.created_at,
                    (SELECT pg_catalog.max(r.created_at) FROM idemgate.runs r
                      WHERE r.workflow = w.workflow),
                    (SELECT pg_catalog.max(e.at) FROM idemgate.events e
                      WHERE e.kind IN ('recovered', 'duplicate')
                        AND (e.details OPERATOR(pg_catalog.->>) 'workflow') = w.workflow)) AS last_seen,
           pg_catalog.date_part('epoch', w.expected_interval)::bigint AS secs
      FROM idemgate.watched_workflows w
), switch AS (
    SELECT c.actions_enabled AND s.setting_enabled AS enabled, c.actions_enabled AS row_enabled,
           s.setting_enabled, c.changed_at, c.changed_by, c.reason
      FROM idemgate.control c, settings s
     WHERE c.singleton
), served AS (
    -- Whether a running dispatcher serves this database (shared memory).
    SELECT EXISTS (SELECT 1 FROM idemgate.dispatcher_status() ds
                    WHERE ds.database = pg_catalog.current_database()) AS here,
           (SELECT pg_catalog.string_agg(DISTINCT ds.database, ', ')
              FROM idemgate.dispatcher_status() ds) AS databases
), ptypes(effect_type) AS (
    -- The effect types with pending effects: a skip scan of the partial
    -- index outbox_due_idx (effect_type, next_attempt_at) WHERE pending, so
    -- that publish_alerts (every second) never reads a healthy backlog row
    -- by row: below, each type costs an index range of its old rows only.
    (SELECT o.effect_type FROM idemgate.outbox o
      WHERE o.state = 'pending' ORDER BY o.effect_type LIMIT 1)
    UNION ALL
    SELECT (SELECT o.effect_type FROM idemgate.outbox o
             WHERE o.state = 'pending' AND o.effect_type > p.effect_type
             ORDER BY o.effect_type LIMIT 1)
      FROM ptypes p WHERE p.effect_type IS NOT NULL
), due AS (
    -- Per type: pending effects due for longer than the stuck threshold
    -- and, where no dispatcher serves this database, HTTP effects due for
    -- longer than the dispatcher_missing threshold. Effects are pending
    -- only once their run was approved; one whose run was failed since is
    -- never sent either, so it counts as stuck too (cancel_effect it).
    SELECT p.effect_type, st.stuck, st.stuck_since, ov.overdue, ov.overdue_since,
           EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type) AS http,
           EXISTS (SELECT 1 FROM idemgate.paused_effect_types pt WHERE pt.effect_type = p.effect_type) AS paused
      FROM ptypes p CROSS JOIN settings s CROSS JOIN served sv
      CROSS JOIN LATERAL (
          SELECT pg_catalog.count(*) AS stuck, pg_catalog.min(o.next_attempt_at) AS stuck_since
            FROM idemgate.outbox o
           WHERE o.state = 'pending' AND o.effect_type = p.effect_type
             AND o.next_attempt_at < pg_catalog.now() - s.stuck_after) st
      CROSS JOIN LATERAL (
          SELECT pg_catalog.count(*) AS overdue, pg_catalog.min(o.next_attempt_at) AS overdue_since
            FROM idemgate.outbox o
           WHERE NOT sv.here
             AND EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type)
             AND o.state = 'pending' AND o.effect_type = p.effect_type
             AND o.next_attempt_at <= pg_catalog.now() - s.missing_after) ov
     WHERE p.effect_type IS NOT NULL
), missing AS (
    SELECT pg_catalog.sum(d.overdue)::bigint AS n, pg_catalog.min(d.overdue_since) AS since,
           sv.databases AS served,
           pg_catalog.current_database()::text COLLATE "default" AS db
      FROM due d CROSS JOIN served sv
     WHERE d.http AND d.overdue > 0
     GROUP BY sv.databases
), stalled AS (
    -- Runs left processing with an expired lease, or failed_retryable and
    -- not redelivered, for longer than idemgate.alert_stalled_after, per
    -- workflow; since = when the lease expired or the run failed. A
    -- processing run's lease never ends before its last change
    -- (updated_at), so "updated_at older than the threshold" holds for
    -- every such run and makes this a range of runs_stalled_idx, which
    -- holds only runs in these two states.
    SELECT r.workflow, pg_catalog.count(*) AS n,
           pg_catalog.count(*) FILTER (WHERE r.state = 'processing') AS expired,
           pg_catalog.min(r.stalled_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(r.idempotency_key) > 64
                                      THEN pg_catalog.left(r.idempotency_key, 61) || '...'
                                      ELSE r.idempotency_key END
                                 ORDER BY r.stalled_at, r.idempotency_key))[1:3] AS keys
      FROM (SELECT r.workflow, r.idempotency_key, r.state,
                   CASE WHEN r.state = 'processing' THEN r.lease_expires_at ELSE r.updated_at END AS stalled_at
              FROM idemgate.runs r CROSS JOIN settings s
             WHERE r.state IN ('processing', 'failed_retryable')
               AND r.updated_at < pg_catalog.now() - s.stalled_after) r
      CROSS JOIN settings s
     WHERE r.stalled_at < pg_catalog.now() - s.stalled_after
     GROUP BY r.workflow
), terminal AS (
    -- Runs failed for good (dead-lettered, not reinjected) in the last
    -- hour, per workflow: fires at once. After an hour an open dead letter
    -- is the dead_letters alert's.
    SELECT r.workflow, pg_catalog.count(*) AS n, pg_catalog.min(d.dead_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(d.idempotency_key) > 64
                                      THEN pg_catalog.left(d.idempotency_key, 61) || '...'
                                      ELSE d.idempotency_key END
                                 ORDER BY d.dead_at, d.idempotency_key))[1:3] AS keys,
           (pg_catalog.array_agg(d.error_class ORDER BY d.dead_at, d.idempotency_key))[1] AS error_class
      FROM idemgate.dead_letters d
      LEFT JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
     WHERE d.reinjected_at IS NULL AND d.kind = 'run'
       AND d.dead_at >= pg_catalog.now() - interval '1 hour'
     GROUP BY r.workflow
), takeovers AS (
    -- Claims that took a run over from an expired lease (recovered events
    -- from processing) in the last 10 minutes, per workflow.
    SELECT t.workflow, pg_catalog.sum(t.n)::bigint AS n, pg_catalog.min(t.first_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(t.idempotency_key) > 64
                                      THEN pg_catalog.left(t.idempotency_key, 61) || '...'
                                      ELSE t.idempotency_key END
                                 ORDER BY t.first_at, t.idempotency_key))[1:3] AS keys
      FROM (SELECT e.details OPERATOR(pg_catalog.->>) 'workflow' AS workflow, e.idempotency_key,
                   pg_catalog.count(*) AS n, pg_catalog.min(e.at) AS first_at
              FROM idemgate.events e
             WHERE e.kind = 'recovered' AND e.at > pg_catalog.now() - interval '10 minutes'
               AND (e.details OPERATOR(pg_catalog.->>) 'from') = 'processing'
             GROUP BY 1, 2) t
     GROUP BY t.workflow
), mismatches AS (
    -- Claims refused with IG001 (their transactions rolled back), counted
    -- in shared memory per workflow (src/payload_mismatches.c).
    SELECT m.workflow, m.mismatches AS n, m.first_at AS since, m.first_keys AS keys
      FROM idemgate.payload_mismatches() m
     WHERE m.firing
), raised AS (
    SELECT 'failure_rate'::text AS alert,
           CASE f.what WHEN 'effect' THEN 'effect_type:' || f.grp
                       ELSE COALESCE('workflow:' || f.grp, 'no_workflow') END AS subject,
           'critical'::text AS severity,
           CASE f.what
             WHEN 'effect' THEN f.n::text || CASE WHEN f.n = 1 THEN ' effect' ELSE ' effects' END
                                || ' of type ' || f.grp || ' not delivered'
             ELSE f.n::text || CASE WHEN f.n = 1 THEN ' run' ELSE ' runs' END
                  || COALESCE(' of workflow ' || f.grp, ' without a workflow') || ' failed'
           END AS text, ''::text AS suffix, f.n AS count, f.since, NULL::text[] AS keys
      FROM failures f, settings s
     WHERE f.n > s.max_failures
    UNION ALL
    SELECT 'dead_letters',
           CASE d.what WHEN 'effect' THEN 'effect_type:' || COALESCE(d.grp, '')
                       ELSE COALESCE('workflow:' || d.grp, 'no_workflow') END,
           'warning',
           d.n::text || CASE WHEN d.n = 1 THEN ' dead letter' ELSE ' dead letters' END
             || CASE d.what WHEN 'effect' THEN ' of type ' || COALESCE(d.grp, '')
                            ELSE COALESCE(' of workflow ' || d.grp, ' without a workflow') END
             || ' older than 1 hour', '',
           d.n, d.since, NULL
      FROM dead d
    UNION ALL
    SELECT 'unknown_effects', 'effect_type:' || u.grp, 'warning',
           u.n::text || CASE WHEN u.n = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || u.grp || ' in doubt',
           ' (maybe delivered: check with the provider, then resolve_effect)',
           u.n, u.since, NULL
      FROM unknown u
    UNION ALL
    SELECT 'silence', 'workflow:' || w.workflow, 'critical',
           'workflow ' || w.workflow || ' silent',
           ' (expected every '
             || CASE WHEN w.secs % 86400 = 0 THEN (w.secs / 86400)::text
                          || CASE WHEN w.secs = 86400 THEN ' day' ELSE ' days' END
                     WHEN w.secs % 3600 = 0 THEN (w.secs / 3600)::text || ' h'
                     WHEN w.secs % 60 = 0 THEN (w.secs / 60)::text || ' min'
                     ELSE w.secs::text || ' s' END || ')',
           pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.now() - w.last_seen)
                            / GREATEST(w.secs, 1))::bigint,
           w.last_seen, NULL
      FROM watched w
     WHERE pg_catalog.now() - w.last_seen > w.expected_interval * 2
    UNION ALL
    SELECT 'stuck_effects', 'effect_type:' || d.effect_type, 'warning',
           d.stuck::text || CASE WHEN d.stuck = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || d.effect_type || ' waiting to be sent',
           CASE WHEN d.paused THEN ' (type paused: resume_effect_type)'
                WHEN NOT sw.enabled THEN ' (kill switch off)'
                WHEN NOT d.http THEN ' (no endpoint, and no worker pulls this type: misspelled type or stopped puller?)'
                ELSE ' (endpoint registered but nothing sent: check dispatcher_status())' END,
           d.stuck, d.stuck_since, NULL
      FROM due d CROSS JOIN switch sw
     WHERE d.stuck > 0
    UNION ALL
    SELECT 'dispatcher_missing', 'database:' || m.db, 'critical',
           m.n::text || CASE WHEN m.n = 1 THEN ' HTTP effect' ELSE ' HTTP effects' END
             || ' due in database ' || m.db
             || ' and no running dispatcher serves it',
           COALESCE(' (dispatchers serve ' || m.served || '; set idemgate.database)',
                    ' (no dispatcher is running: is idemgate in shared_preload_libraries?)'),
           m.n, m.since, NULL
      FROM missing m
    UNION ALL
    SELECT 'kill_switch_off', 'kill_switch', 'info',
           'kill switch off',
           CASE WHEN NOT sw.row_enabled
                THEN ' (by ' || COALESCE(sw.changed_by, '?') || ': ' || COALESCE(sw.reason, '') || ')'
                ELSE ' (setting idemgate.actions_enabled is off)' END,
           1::bigint, CASE WHEN NOT sw.row_enabled THEN sw.changed_at END, NULL
      FROM switch sw
     WHERE NOT sw.enabled
    UNION ALL
    SELECT 'type_paused', 'effect_type:' || p.effect_type, 'info',
           'effect type ' || p.effect_type || ' paused',
           ' (' || (SELECT pg_catalog.count(*) FROM idemgate.outbox o
                     WHERE o.effect_type = p.effect_type AND o.state = 'pending')::text
             || ' pending; by ' || p.paused_by || ': ' || p.reason || ')',
           (SELECT pg_catalog.count(*) FROM idemgate.outbox o
             WHERE o.effect_type = p.effect_type AND o.state = 'pending'),
           p.paused_at, NULL
      FROM idemgate.paused_effect_types p
    UNION ALL
    SELECT 'stalled_runs', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           CASE WHEN t.n = 1 THEN 'run ' || t.keys[1] ELSE t.n::text || ' runs' END
             || COALESCE(' of workflow ' || t.workflow, ' without a workflow') || ' stalled',
           ' ('
             || CASE WHEN t.n > 1 THEN 'first: ' || pg_catalog.array_to_string(t.keys, ', ') || '; ' ELSE '' END
             || CASE WHEN t.expired = t.n AND t.n = 1 THEN 'lease expired, not taken over'
                     WHEN t.expired = t.n THEN 'leases expired, not taken over'
                     WHEN t.expired = 0 THEN 'failed_retryable, not redelivered'
                     ELSE t.expired::text || ' with an expired lease, ' || (t.n - t.expired)::text
                          || ' failed_retryable not redelivered' END
             || ': is a worker down or a trigger off?)',
           t.n, t.since, t.keys
      FROM stalled t
    UNION ALL
    SELECT 'terminal_failure', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           CASE WHEN t.n = 1 THEN 'run ' || t.keys[1] ELSE t.n::text || ' runs' END
             || COALESCE(' of workflow ' || t.workflow, ' without a workflow') || ' failed for good',
           CASE WHEN t.n = 1 THEN ' (' || COALESCE(t.error_class, 'no error class')
                                  || '; its input is in the dead letter: reinject or supersede)'
                ELSE ' (first: ' || pg_catalog.array_to_string(t.keys, ', ')
                     || '; their inputs are in the dead letters: reinject or supersede)' END,
           t.n, t.since, t.keys
      FROM terminal t
    UNION ALL
    SELECT 'lease_takeovers', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           t.n::text || ' expired leases' || COALESCE(' of workflow ' || t.workflow, ' without a workflow')
             || ' taken over in 10 minutes',
           ' (first: ' || pg_catalog.array_to_string(t.keys, ', ')
             || '; workers dying, or leases shorter than the work: compare run_metrics())',
           t.n, t.since, t.keys
      FROM takeovers t CROSS JOIN settings s
     WHERE t.n > s.max_takeovers
    UNION ALL
    SELECT 'payload_mismatch', COALESCE('workflow:' || m.workflow, 'no_workflow'), 'critical',
           CASE WHEN m.n = 1 THEN 'key ' || m.keys[1] || COALESCE(' of workflow ' || m.workflow, ' without a workflow')
                                  || ' delivered again with a different payload'
                ELSE m.n::text || ' deliveries' || COALESCE(' of workflow ' || m.workflow, ' without a workflow')
                     || ' reused a key with a different payload' END,
           CASE WHEN m.n = 1 THEN ' (IG001, refused: stop and investigate upstream)'
                ELSE ' (first: ' || pg_catalog.array_to_string(m.keys, ', ')
                     || '; IG001, refused: stop and investigate upstream)' END,
           m.n, m.since, m.keys
      FROM mismatches m
)
SELECT r.alert, r.subject, r.severity,
       r.text
         || COALESCE(' since '
                     || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                                         THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END), '')
         || r.suffix AS message,
       r.count, r.since, r.keys
  FROM raised r;

COMMENT ON VIEW idemgate.alert_instances IS
'idemgate.alerts plus the subject (effect type, workflow or database) that identifies each alert and, for alerts about runs, their first keys; read by publish_alerts and prometheus()';

COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type, workflow or database: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval), stuck_effects (due pending effects older than idemgate.alert_stuck_after), dispatcher_missing (HTTP effects due where no dispatcher runs), kill_switch_off and type_paused (info), stalled_runs (runs processing with an expired lease or failed_retryable for longer than idemgate.alert_stalled_after), terminal_failure (runs failed for good in the last hour), lease_takeovers (more than idemgate.alert_lease_takeovers takeovers of expired leases in 10 minutes), payload_mismatch (claims refused with IG001 in the last hour); messages name the workflow and the first keys';

-- Readers read the alerts view, which calls payload_mismatches(); the
-- reports are the readers' too.
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('reader', 'idemgate.payload_mismatches()'),
    ('operator', 'idemgate.payload_mismatches()'),
    ('operator', 'idemgate.clear_payload_mismatches()'),
    ('reader', 'idemgate.run_metrics(timestamptz)'),
    ('operator', 'idemgate.run_metrics(timestamptz)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.run_metrics_rollup');
-- Roles that already hold a bundle get its new members from 99_release_grants.sql.
