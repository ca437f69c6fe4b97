-- sql/views/alert_instances.sql

-- alert_instances: every alert firing now, one row per alert and subject
-- (docs/operations.md, "Alerts"; the list is in the view's comment on
-- idemgate.alerts). terminal_failure also names the runs that ended with a
-- failed effect, at once, by key; approvals_waiting, per workflow, the
-- approvals undecided for longer than idemgate.alert_approval_wait (4
-- hours), with the first keys and the audience of the oldest.
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
                    5) AS max_takeovers,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_approval_wait', true), '')::interval,
                    interval '4 hours') AS approval_wait
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
           EXISTS (SELECT 1 FROM idemgate.paused_effect_types pt WHERE pt.effect_type = p.effect_type) AS paused,
           EXISTS (SELECT 1 FROM idemgate.endpoint_circuits c WHERE c.effect_type = p.effect_type) AS circuit_open
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
    -- A run whose effect failed for good ends failed_terminal with that
    -- effect's dead letter open (1.3): since = when the run ended.
    SELECT t.workflow, pg_catalog.count(*) AS n, pg_catalog.min(t.at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(t.idempotency_key) > 64
                                      THEN pg_catalog.left(t.idempotency_key, 61) || '...'
                                      ELSE t.idempotency_key END
                                 ORDER BY t.at, t.idempotency_key))[1:3] AS keys,
           (pg_catalog.array_agg(t.error_class ORDER BY t.at, t.idempotency_key))[1] AS error_class
      FROM (SELECT DISTINCT ON (u.idempotency_key) u.workflow, u.idempotency_key, u.at, u.error_class
              FROM (SELECT r.workflow, d.idempotency_key, d.dead_at AS at, d.error_class
                      FROM idemgate.dead_letters d
                      LEFT JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
                     WHERE d.reinjected_at IS NULL AND d.kind = 'run'
                       AND d.dead_at >= pg_catalog.now() - interval '1 hour'
                    UNION ALL
                    SELECT r.workflow, r.idempotency_key, r.updated_at, d.error_class
                      FROM idemgate.dead_letters d
                      JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
                     WHERE d.reinjected_at IS NULL AND d.kind = 'effect' AND r.state = 'failed_terminal'
                       AND r.updated_at >= pg_catalog.now() - interval '1 hour') u
             ORDER BY u.idempotency_key, u.at) t
     GROUP BY t.workflow
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
    -- in shared memory per workflow (src/ledger/payload_mismatches.c).
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
), waiting AS (
    -- Approvals nobody decided (not consumed, not expired) for longer
    -- than approval_wait, per workflow: a range of approvals_pending_idx.
    SELECT r.workflow, pg_catalog.count(*) AS n, pg_catalog.min(a.created_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(a.idempotency_key) > 64
                                      THEN pg_catalog.left(a.idempotency_key, 61) || '...'
                                      ELSE a.idempotency_key END
                                 ORDER BY a.created_at, a.idempotency_key))[1:3] AS keys,
           (pg_catalog.array_agg(COALESCE(pg_catalog.array_to_string(a.audience, ', '), 'anyone allowed to decide')
                                 ORDER BY a.created_at, a.idempotency_key))[1] AS audience
      FROM idemgate.approvals a
      LEFT JOIN idemgate.runs r ON r.idempotency_key = a.idempotency_key
     WHERE a.consumed_at IS NULL AND a.expires_at > pg_catalog.now()
       AND a.created_at < pg_catalog.now() - (SELECT s.approval_wait FROM settings s)
     GROUP BY r.workflow
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
     WHERE d.stuck > 0 AND NOT d.circuit_open	-- endpoint_down says why
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
    UNION ALL
    SELECT 'approvals_waiting', COALESCE('workflow:' || w.workflow, 'no_workflow'), 'warning',
           CASE WHEN w.n = 1 THEN 'approval of run ' || w.keys[1] ELSE w.n::text || ' approvals' END
             || COALESCE(' of workflow ' || w.workflow, ' without a workflow') || ' waiting for a decision',
           ' ('
             || CASE WHEN w.n > 1 THEN 'first: ' || pg_catalog.array_to_string(w.keys, ', ') || '; ' ELSE '' END
             || 'audience: ' || w.audience || '; decide with consume_approval or cancel_approval)',
           w.n, w.since, w.keys
      FROM waiting w
    UNION ALL
    -- secret_missing: an endpoint names a secret idemgate.secrets_file
    -- lacks (src/policy/secrets.c); its effects are held, since the endpoint's
    -- last change. The count is of the missing secrets (a count of held
    -- effects would be a look-up per endpoint that Citus cannot run).
    SELECT 'secret_missing', 'effect_type:' || ep.effect_type, 'critical',
           'endpoint of type ' || ep.effect_type || ' names secret '
             || pg_catalog.array_to_string(ms.names, ', ') || ' that idemgate.secrets_file lacks',
           ' (or the file cannot be used: the server log says why; its effects are held;'
             || ' add the secret to the file and reload)',
           pg_catalog.cardinality(ms.names)::bigint, ep.updated_at, NULL
      FROM idemgate.endpoints ep
      CROSS JOIN LATERAL (SELECT idemgate.missing_secrets(ep.headers) AS names) ms
     WHERE ms.names IS NOT NULL
    UNION ALL
    -- endpoint_down: the endpoint's circuit is open (38_endpoint_circuits.sql):
    -- its effects wait as pending, a probe goes out at next_probe_at; the
    -- alert clears when a probe (or any delivery) succeeds.
    SELECT 'endpoint_down', 'effect_type:' || h.effect_type, 'critical',
           'endpoint of type ' || h.effect_type || ' is down ('
             || h.failures::text || ' ' || h.error_class || ' failures in a row'
             || COALESCE(', HTTP ' || h.last_status::text, '') || '); '
             || h.waiting::text || CASE WHEN h.waiting = 1 THEN ' effect waits' ELSE ' effects wait' END,
           ' (probe ' || (h.probes + 1)::text || ' at '
             || pg_catalog.to_char(h.next_probe_at, 'HH24:MI:SS')
             || '; the backlog drains once a probe succeeds; reset_circuit closes it by hand)',
           h.waiting, h.opened_at, NULL
      FROM idemgate.endpoint_health h
     WHERE h.state OPERATOR(pg_catalog.<>) 'closed'
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

REVOKE ALL ON idemgate.alert_instances FROM PUBLIC;
