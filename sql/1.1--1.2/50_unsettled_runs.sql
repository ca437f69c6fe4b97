-- sql/1.1--1.2/50_unsettled_runs.sql
--
-- A run completes with its last effect under every isolation level
-- (docs/outbox.md, "Completing a run"; src/runs.c): the completion check
-- runs in a snapshot taken after the run's lock. Around it, a safety net
-- and an alert for approved runs whose effects are all settled, however
-- they got there (before this version, two effects completed at once in
-- REPEATABLE READ transactions left their run approved for ever):
--   complete_settled_runs(max_runs)  completes them; the dispatcher calls
--                                    it every second (src/dispatcher.c);
--   alert unsettled_runs             names them (workflow, first keys)
--                                    when they last more than a minute.
-- C: src/runs.c (CompleteSettledRuns), src/dispatcher.c.

-- ---------------------------------------------------------------------------
-- The alerts about runs (stalled_runs, unsettled_runs) and the safety net
-- find their runs through one partial index of the runs in flight:
-- processing, failed_retryable and approved, by updated_at then state, so
-- each reads only its own states. A claim adds one entry to it (a new run
-- is processing; bench/README.md), and a change of state is no longer a HOT
-- update (the predicate reads state). A second partial index would cost
-- every claim its opening and its predicate (about 7,700 CPU instructions
-- of 159,000, bench/claim/instructions.sh).
CREATE INDEX runs_open_idx ON idemgate.runs (updated_at, state)
    WHERE state IN ('processing', 'failed_retryable', 'approved');

-- ---------------------------------------------------------------------------
CREATE FUNCTION idemgate.complete_settled_runs(max_runs integer DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_settled_runs';
COMMENT ON FUNCTION idemgate.complete_settled_runs(integer) IS
'Complete the approved runs none of whose effects is in another state than completed or cancelled (each locked, SKIP LOCKED, and checked again after the lock), as their last effect should have; returns how many. max_runs NULL looks at every approved run; a number (1..100000) looks at that many, continuing where the previous call of this session stopped. The dispatcher calls it every second; call it where no dispatcher serves the database';
REVOKE ALL ON FUNCTION idemgate.complete_settled_runs(integer) FROM PUBLIC;
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.complete_settled_runs(integer)');
-- Roles that already hold operator get it from 99_release_grants.sql.

-- ---------------------------------------------------------------------------
-- Alerts: the 1.1 alerts plus
--   stalled_runs      per workflow: runs left processing with an expired
--                     lease, or failed_retryable and not redelivered, for
--                     longer than idemgate.alert_stalled_after (15 min);
--   terminal_failure  per workflow: runs failed for good in the last hour
--                     (open dead letters), at once;
--   lease_takeovers   per workflow: more than idemgate.alert_lease_takeovers
--                     (5) takeovers of expired leases in 10 minutes;
--   payload_mismatch  per workflow: claims refused with IG001 in the last
--                     hour (payload_mismatches());
--   unsettled_runs    per workflow: runs approved with all their effects
--                     settled for longer than a minute, not completed.
-- Each names the workflow and the first keys (at most 3, each cut to 64
-- characters: IDEMGATE_ALERT_FIRST_KEYS and IDEMGATE_ALERT_KEY_CHARS in
-- src/idemgate_limits.h), in its message and in the new column keys. The
-- silence check keeps the predicate of events_claim_workflow_idx.
-- Whoever redefines this view later: start from this file's definition.
-- The three parts of the alerts that read per-run tables in ways Citus
-- cannot run across shards (a recursive skip scan, look-ups per type, per
-- workflow and per run) are functions, each run once per read of the
-- view: standard SQL bodies, parsed here like a view's, with the plans the
-- view had. They read the tables as their owner, as the view does, so a
-- reader needs EXECUTE on them (the reader bundle). idemgate.distribute()
-- points each at its distributed version
-- (sql/1.1--1.2/62_distributed_alerts.sql).

-- Per effect type with pending effects: those due for longer than
-- stuck_after and, unless here (a dispatcher serves this database), the
-- HTTP ones due for longer than missing_after. The types come from a skip
-- scan of the partial index outbox_due_idx (effect_type, next_attempt_at)
-- WHERE pending, so that publish_alerts (every second) never reads a
-- healthy backlog row by row: each type costs an index range of its old
-- rows only. Effects are pending only once their run was approved; one
-- whose run was failed since is never sent either, so it counts as stuck
-- too (cancel_effect it).
CREATE FUNCTION idemgate.alert_pending_types(stuck_after interval, missing_after interval, here boolean)
RETURNS TABLE(effect_type text, stuck bigint, stuck_since timestamptz,
              overdue bigint, overdue_since timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
WITH RECURSIVE ptypes(effect_type) AS (
    (SELECT o.effect_type FROM idemgate.outbox o
      WHERE o.state = 'pending' ORDER BY o.effect_type LIMIT 1)
    UNION ALL
    SELECT (SELECT o.effect_type FROM idemgate.outbox o
             WHERE o.state = 'pending' AND o.effect_type > p.effect_type
             ORDER BY o.effect_type LIMIT 1)
      FROM ptypes p WHERE p.effect_type IS NOT NULL
)
SELECT p.effect_type, st.stuck, st.stuck_since, ov.overdue, ov.overdue_since
  FROM ptypes p
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS stuck, pg_catalog.min(o.next_attempt_at) AS stuck_since
        FROM idemgate.outbox o
       WHERE o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at < pg_catalog.now() - alert_pending_types.stuck_after) st
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS overdue, pg_catalog.min(o.next_attempt_at) AS overdue_since
        FROM idemgate.outbox o
       WHERE NOT alert_pending_types.here
         AND EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type)
         AND o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at <= pg_catalog.now() - alert_pending_types.missing_after) ov
 WHERE p.effect_type IS NOT NULL;
END;
REVOKE ALL ON FUNCTION idemgate.alert_pending_types(interval, interval, boolean) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_pending_types(interval, interval, boolean) IS
'Part of idemgate.alert_instances: per effect type, pending effects due for longer than stuck_after, and (unless here) HTTP effects due for longer than missing_after';

-- Per watched workflow: when it was last seen (registered, claimed, or a
-- duplicate or recovery of one of its runs).
CREATE FUNCTION idemgate.alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT w.workflow, w.expected_interval,
       GREATEST(w.created_at,
                (SELECT pg_catalog.max(r.created_at) FROM idemgate.runs r
                  WHERE r.workflow = w.workflow),
                (SELECT pg_catalog.max(e.at) FROM idemgate.events e
                  WHERE e.kind IN ('recovered', 'duplicate')
                    AND (e.details OPERATOR(pg_catalog.->>) 'workflow') = w.workflow))
  FROM idemgate.watched_workflows w;
END;
REVOKE ALL ON FUNCTION idemgate.alert_watched_workflows() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_watched_workflows() IS
'Part of idemgate.alert_instances: each watched workflow and when it was last seen';

-- Runs approved with every effect settled (completed or cancelled), and
-- when the last was settled. It looks at the 1000 runs approved last, at
-- least a minute ago (IDEMGATE_UNSETTLED_ALERT_RUNS, a range of
-- runs_open_idx): each costs a look-up of its effects, and the runs
-- waiting for deliveries or people (a backlog, unknown or failed effects)
-- can be many; complete_settled_runs() looks at all of them.
CREATE FUNCTION idemgate.alert_unsettled_runs()
RETURNS TABLE(workflow text, idempotency_key text, settled_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT a.workflow, a.idempotency_key,
       COALESCE((SELECT pg_catalog.max(o.updated_at) FROM idemgate.outbox o
                  WHERE o.idempotency_key = a.idempotency_key), a.updated_at)
  FROM (SELECT r.workflow, r.idempotency_key, r.updated_at
          FROM idemgate.runs r
         WHERE r.state = 'approved' AND r.updated_at < pg_catalog.now() - interval '1 minute'
         ORDER BY r.updated_at DESC
         LIMIT 1000) a
 -- a probe per run that stops at its first open effect
 WHERE (SELECT o.effect_id FROM idemgate.outbox o
         WHERE o.idempotency_key = a.idempotency_key
           AND o.state <> ALL ('{completed,cancelled}'::text[])
         LIMIT 1) IS NULL;
END;
REVOKE ALL ON FUNCTION idemgate.alert_unsettled_runs() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_unsettled_runs() IS
'Part of idemgate.alert_instances: runs approved at least a minute ago (the last 1000) whose effects are all completed or cancelled, and when the last was settled';

CREATE OR REPLACE VIEW idemgate.alert_instances AS
WITH settings AS (
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
    SELECT w.workflow, w.expected_interval, w.last_seen,
           pg_catalog.date_part('epoch', w.expected_interval)::bigint AS secs
      FROM idemgate.alert_watched_workflows() w
), switch AS (
    SELECT c.actions_enabled AND s.setting_enabled AS enabled, c.actions_enabled AS row_enabled,
           s.setting_enabled, c.changed_at, c.changed_by, c.reason
      FROM idemgate.control c, settings s
     WHERE c.singleton
), served AS (
    -- Whether a running dispatcher serves this database (shared memory).
    SELECT EXISTS (SELECT 1 FROM idemgate.node_dispatcher_status() ds
                    WHERE ds.database = pg_catalog.current_database()) AS here,
           (SELECT pg_catalog.string_agg(DISTINCT ds.database, ', ')
              FROM idemgate.node_dispatcher_status() ds) AS databases
), due AS (
    -- Per type: pending effects due for longer than the stuck threshold
    -- and, where no dispatcher serves this database, HTTP effects due for
    -- longer than the dispatcher_missing threshold (alert_pending_types).
    SELECT p.effect_type, p.stuck, p.stuck_since, p.overdue, p.overdue_since,
           EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type) AS http,
           EXISTS (SELECT 1 FROM idemgate.paused_effect_types pt WHERE pt.effect_type = p.effect_type) AS paused
      FROM settings s CROSS JOIN served sv
      CROSS JOIN LATERAL idemgate.alert_pending_types(s.stuck_after, s.missing_after, sv.here) p
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
    -- every such run and makes this a range of runs_open_idx, which
    -- holds only runs in these two states and approved ones. The threshold
    -- is a scalar subquery, computed once: joined as a row, Citus made it
    -- a function scan that each shard re-read for every run (seconds with
    -- 40k runs processing).
    SELECT r.workflow, pg_catalog.count(*) AS n,
           pg_catalog.count(*) FILTER (WHERE r.state = 'processing') AS expired,
           pg_catalog.min(r.stalled_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(r.idempotency_key) > 64
                                      THEN pg_catalog.left(r.idempotency_key, 61) || '...'
                                      ELSE r.idempotency_key END
                                 ORDER BY r.stalled_at, r.idempotency_key))[1:3] AS keys
      FROM (SELECT r.workflow, r.idempotency_key, r.state,
                   CASE WHEN r.state = 'processing' THEN r.lease_expires_at ELSE r.updated_at END AS stalled_at
              FROM idemgate.runs r
             WHERE r.state IN ('processing', 'failed_retryable')
               AND r.updated_at < pg_catalog.now() - (SELECT s.stalled_after FROM settings s)) r
     WHERE r.stalled_at < pg_catalog.now() - (SELECT s.stalled_after FROM settings s)
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
), unsettled AS (
    -- Runs approved with every effect settled (completed or cancelled) for
    -- longer than a minute, per workflow; since = when the last effect was
    -- settled. Such a run should have completed with its last effect
    -- (docs/outbox.md, "Completing a run"), and the dispatcher's
    -- complete_settled_runs() completes any it finds, so this fires where
    -- no dispatcher does (or it fails); alert_unsettled_runs() finds them.
    SELECT u.workflow, pg_catalog.count(*) AS n, pg_catalog.min(u.settled_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(u.idempotency_key) > 64
                                      THEN pg_catalog.left(u.idempotency_key, 61) || '...'
                                      ELSE u.idempotency_key END
                                 ORDER BY u.settled_at, u.idempotency_key))[1:3] AS keys
      FROM idemgate.alert_unsettled_runs() u
     WHERE u.settled_at < pg_catalog.now() - interval '1 minute'
     GROUP BY u.workflow
), paused_pending AS (
    -- Pending effects of each paused type: index ranges of outbox_due_idx.
    SELECT o.effect_type, pg_catalog.count(*) AS n
      FROM idemgate.outbox o
     WHERE o.state = 'pending'
       AND o.effect_type = ANY (ARRAY(SELECT pt.effect_type FROM idemgate.paused_effect_types pt))
     GROUP BY o.effect_type
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
           ' (' || COALESCE(pp.n, 0)::text
             || ' pending; by ' || p.paused_by || ': ' || p.reason || ')',
           COALESCE(pp.n, 0), p.paused_at, NULL
      FROM idemgate.paused_effect_types p
      LEFT JOIN paused_pending pp ON pp.effect_type = p.effect_type
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
    UNION ALL
    SELECT 'unsettled_runs', COALESCE('workflow:' || u.workflow, 'no_workflow'), 'warning',
           CASE WHEN u.n = 1 THEN 'run ' || u.keys[1] ELSE u.n::text || ' runs' END
             || COALESCE(' of workflow ' || u.workflow, ' without a workflow')
             || CASE WHEN u.n = 1 THEN ' approved with all its effects settled'
                     ELSE ' approved with all their effects settled' END,
           ' ('
             || CASE WHEN u.n > 1 THEN 'first: ' || pg_catalog.array_to_string(u.keys, ', ') || '; ' ELSE '' END
             || 'not completed: a dispatcher serving this database completes them;'
             || ' else call complete_settled_runs())',
           u.n, u.since, u.keys
      FROM unsettled u
)
SELECT r.alert, r.subject, r.severity,
       r.text
         || COALESCE(' since '
                     || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                                         THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END), '')
         || r.suffix AS message,
       r.count, r.since, r.keys
  FROM raised r;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.alert_pending_types(interval,interval,boolean)'),
    ('operator', 'idemgate.alert_watched_workflows()'),
    ('operator', 'idemgate.alert_unsettled_runs()'),
    ('reader', 'idemgate.alert_pending_types(interval,interval,boolean)'),
    ('reader', 'idemgate.alert_watched_workflows()'),
    ('reader', 'idemgate.alert_unsettled_runs()');

COMMENT ON VIEW idemgate.alert_instances IS
'idemgate.alerts plus the subject (effect type, workflow or database) that identifies each alert and, for alerts about runs, their first keys; read by publish_alerts and prometheus()';

COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type, workflow or database: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval), stuck_effects (due pending effects older than idemgate.alert_stuck_after), dispatcher_missing (HTTP effects due where no dispatcher runs), kill_switch_off and type_paused (info), stalled_runs (runs processing with an expired lease or failed_retryable for longer than idemgate.alert_stalled_after), terminal_failure (runs failed for good in the last hour), lease_takeovers (more than idemgate.alert_lease_takeovers takeovers of expired leases in 10 minutes), payload_mismatch (claims refused with IG001 in the last hour), unsettled_runs (runs approved with all their effects settled for longer than a minute, not completed); messages name the workflow and the first keys';
