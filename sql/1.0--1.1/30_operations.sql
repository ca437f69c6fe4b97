
-- ---------------------------------------------------------------------------
-- 30_operations.sql — operating effects per type (SPEC §14, issue 10):
-- pause/resume per type, cancellation, unregistering endpoints, delayed
-- effects, the effect_types view, the new alerts, the metrics rollup that
-- purge keeps, and per-type Prometheus series.
-- ---------------------------------------------------------------------------

-- Paused effect types (src/effect_types.c). THE PAUSE TABLE IS
-- idemgate.paused_effect_types: a type is paused while it has a row here.
-- claim_effects and the dispatcher's claim statement skip paused types;
-- the dispatcher's send-time barrier (45_dispatch.sql, src/dispatcher.c)
-- reads the same table (or EffectTypePaused() in src/effect_types.h).
CREATE TABLE idemgate.paused_effect_types (
    effect_type text PRIMARY KEY,
    paused_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    paused_by   text NOT NULL,
    reason      text NOT NULL
);
COMMENT ON TABLE idemgate.paused_effect_types IS
'Effect types held by pause_effect_type: neither the dispatcher nor claim_effects takes their effects until resume_effect_type';
SELECT pg_catalog.pg_extension_config_dump('idemgate.paused_effect_types', '');
REVOKE ALL ON idemgate.paused_effect_types FROM PUBLIC;

CREATE FUNCTION idemgate.pause_effect_type(effect_type text, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_pause_effect_type';
COMMENT ON FUNCTION idemgate.pause_effect_type(text, text, text) IS
'Hold every effect of one type (like the kill switch, for one type): not claimed by the dispatcher nor by claim_effects until resume_effect_type; audited with actor and reason; IG003 for a type with no effects, endpoint or pause';

CREATE FUNCTION idemgate.resume_effect_type(effect_type text, actor text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resume_effect_type';
COMMENT ON FUNCTION idemgate.resume_effect_type(text, text) IS
'End the pause of an effect type: its held effects go out again; audited; IG003 for a type with no effects, endpoint or pause';

CREATE FUNCTION idemgate.unregister_endpoint(effect_type text, actor text)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_unregister_endpoint';
COMMENT ON FUNCTION idemgate.unregister_endpoint(text, text) IS
'Remove the HTTP endpoint of an effect type (audited); its pending effects then wait for claim_effects or a new endpoint. False when none was registered';

-- Cancellation (src/cancel.c): a new outbox state, cancelled — never sent,
-- no dead letter, settled like completed for the run and for purge.
ALTER TABLE idemgate.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE idemgate.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sending', 'completed', 'unknown', 'failed', 'cancelled'));

CREATE FUNCTION idemgate.cancel_effect(effect_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_effect';
COMMENT ON FUNCTION idemgate.cancel_effect(uuid, text, text) IS
'Cancel a pending or unknown effect: state cancelled, never sent afterwards, no dead letter; the run completes when its other effects are settled. IG002 from any other state, IG003 for an unknown effect';

CREATE FUNCTION idemgate.cancel_approval(approval_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_approval';
COMMENT ON FUNCTION idemgate.cancel_approval(uuid, text, text) IS
'Cancel an undecided approval as an operator: consumed with decision cancelled, its run failed_terminal like a rejection (no dead letter); cancelled, or invalid when already decided or expired; IG003 for an unknown approval';

-- Per-type overview (reader). One row per type that has effects, an
-- endpoint or a pause. failed_24h counts effects dead-lettered (failed) in
-- the last 24 hours, completed_24h effects completed in them.
CREATE VIEW idemgate.effect_types AS
WITH o AS (
    SELECT o.effect_type,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending') AS pending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending'
                                          AND o.next_attempt_at <= pg_catalog.now()
                                          AND r.state = 'approved') AS due,
           pg_catalog.count(*) FILTER (WHERE o.state = 'sending') AS sending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'unknown') AS unknown,
           pg_catalog.count(*) FILTER (WHERE o.state = 'failed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS failed_24h,
           pg_catalog.count(*) FILTER (WHERE o.state = 'completed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS completed_24h,
           pg_catalog.min(o.created_at) FILTER (WHERE o.state = 'pending') AS oldest_pending
      FROM idemgate.outbox o
      LEFT JOIN idemgate.runs r ON r.idempotency_key = o.idempotency_key
     GROUP BY o.effect_type
), t AS (
    SELECT effect_type FROM o
    UNION
    SELECT effect_type FROM idemgate.endpoints
    UNION
    SELECT effect_type FROM idemgate.paused_effect_types
)
SELECT t.effect_type,
       EXISTS (SELECT 1 FROM idemgate.endpoints e WHERE e.effect_type = t.effect_type) AS has_endpoint,
       EXISTS (SELECT 1 FROM idemgate.paused_effect_types p WHERE p.effect_type = t.effect_type) AS paused,
       COALESCE(o.pending, 0) AS pending, COALESCE(o.due, 0) AS due,
       COALESCE(o.sending, 0) AS sending, COALESCE(o.unknown, 0) AS unknown,
       COALESCE(o.failed_24h, 0) AS failed_24h, COALESCE(o.completed_24h, 0) AS completed_24h,
       pg_catalog.now() - o.oldest_pending AS oldest_pending_age
  FROM t LEFT JOIN o ON o.effect_type = t.effect_type;
COMMENT ON VIEW idemgate.effect_types IS
'One row per effect type with effects, an endpoint or a pause: whether it has an endpoint and is paused, its backlog (pending, due, sending, unknown), effects failed and completed in the last 24 hours, and the age of its oldest pending effect';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.pause_effect_type(text,text,text)'),
    ('operator', 'idemgate.resume_effect_type(text,text)'),
    ('operator', 'idemgate.unregister_endpoint(text,text)'),
    ('operator', 'idemgate.cancel_effect(uuid,text,text)'),
    ('operator', 'idemgate.cancel_approval(uuid,text,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.effect_types'),
    ('operator', 'idemgate.effect_types'),
    ('operator', 'idemgate.paused_effect_types');

-- dispatcher_status() gains the database each dispatcher serves. The
-- result type changes, so the function is made again; roles holding a
-- bundle get EXECUTE back below (bundle_members names it by signature).
DROP FUNCTION idemgate.dispatcher_status();
CREATE FUNCTION idemgate.dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz, database text)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_dispatcher_status';
COMMENT ON FUNCTION idemgate.dispatcher_status() IS
'One row per running dispatcher (none without shared_preload_libraries): requests in flight, counters since it started (claimed, completed, failed, released back to pending by the kill switch or a pause) and the database it serves (idemgate.database)';
REVOKE EXECUTE ON FUNCTION idemgate.dispatcher_status() FROM PUBLIC;

-- Alerts (SPEC §14): the 1.0 alerts plus
--   stuck_effects      per type: pending effects due for
--                      longer than idemgate.alert_stuck_after (default 15 min),
--                      whether or not anything could take them (no endpoint
--                      and no puller, paused, kill switch off);
--   dispatcher_missing HTTP effects (their type has an endpoint) due for longer
--                      than idemgate.alert_dispatcher_missing_after (default
--                      1 min) in a database no running dispatcher serves;
--   kill_switch_off    (info) while the switch or the setting is off;
--   type_paused        (info) per paused type.
-- The message of an alert without a since (the setting turned the kill
-- switch off) has no "since" part. The silence check ("watched") asks for
-- kind IN ('recovered', 'duplicate'), the predicate of
-- events_claim_workflow_idx (10_release.sql): whoever redefines this view
-- later, keep it.
CREATE OR REPLACE VIEW idemgate.alert_instances AS
WITH RECURSIVE settings AS (
    SELECT COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_failures', true), '')::bigint,
                    10) AS max_failures,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_stuck_after', true), '')::interval,
                    interval '15 minutes') AS stuck_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_dispatcher_missing_after', true), '')::interval,
                    interval '1 minute') AS missing_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.actions_enabled', true), '')::boolean,
                    true) AS setting_enabled
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
           END AS text, ''::text AS suffix, f.n AS count, f.since
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
           d.n, d.since
      FROM dead d
    UNION ALL
    SELECT 'unknown_effects', 'effect_type:' || u.grp, 'warning',
           u.n::text || CASE WHEN u.n = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || u.grp || ' in doubt',
           ' (maybe delivered: check with the provider, then resolve_effect)',
           u.n, u.since
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
           w.last_seen
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
           d.stuck, d.stuck_since
      FROM due d CROSS JOIN switch sw
     WHERE d.stuck > 0
    UNION ALL
    SELECT 'dispatcher_missing', 'database:' || m.db, 'critical',
           m.n::text || CASE WHEN m.n = 1 THEN ' HTTP effect' ELSE ' HTTP effects' END
             || ' due in database ' || m.db
             || ' and no running dispatcher serves it',
           COALESCE(' (dispatchers serve ' || m.served || '; set idemgate.database)',
                    ' (no dispatcher is running: is idemgate in shared_preload_libraries?)'),
           m.n, m.since
      FROM missing m
    UNION ALL
    SELECT 'kill_switch_off', 'kill_switch', 'info',
           'kill switch off',
           CASE WHEN NOT sw.row_enabled
                THEN ' (by ' || COALESCE(sw.changed_by, '?') || ': ' || COALESCE(sw.reason, '') || ')'
                ELSE ' (setting idemgate.actions_enabled is off)' END,
           1::bigint, CASE WHEN NOT sw.row_enabled THEN sw.changed_at END
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
           p.paused_at
      FROM idemgate.paused_effect_types p
)
SELECT r.alert, r.subject, r.severity,
       r.text
         || COALESCE(' since '
                     || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                                         THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END), '')
         || r.suffix AS message,
       r.count, r.since
  FROM raised r;

COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type, workflow or database: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval), stuck_effects (due pending effects older than idemgate.alert_stuck_after), dispatcher_missing (HTTP effects due where no dispatcher runs), kill_switch_off and type_paused (info)';

-- CREATE EXTENSION in a database the dispatcher does not serve raises a
-- NOTICE saying so: src/extension_notice.c (a utility hook of the preloaded
-- library; a NOTICE from this script would never reach the client, since
-- extension scripts run with client_min_messages at least WARNING).

-- Metrics that survive purge (src/metrics.c, src/metrics.h): purge adds
-- what metrics() counts of the rows it deletes to an hourly rollup, in the
-- same statement; metrics(since) = live rows + rolled-up hours. Nothing is
-- written on the claim or delivery paths.
CREATE TABLE idemgate.metrics_rollup (
    hour              timestamptz PRIMARY KEY,
    first_at          timestamptz NOT NULL,
    last_at           timestamptz NOT NULL,
    claimed           bigint NOT NULL DEFAULT 0,
    duplicates        bigint NOT NULL DEFAULT 0,
    recovered         bigint NOT NULL DEFAULT 0,
    approvals_decided bigint NOT NULL DEFAULT 0,
    human_approved    bigint NOT NULL DEFAULT 0,
    validations       bigint NOT NULL DEFAULT 0,
    invalid           bigint NOT NULL DEFAULT 0,
    auto_approved     bigint NOT NULL DEFAULT 0,
    retries           bigint NOT NULL DEFAULT 0,
    retry_exhausted   bigint NOT NULL DEFAULT 0,
    approval_waits    double precision[] NOT NULL DEFAULT '{}'
);
COMMENT ON TABLE idemgate.metrics_rollup IS
'What metrics() counted from purged runs, per UTC hour: first claims (claimed), duplicate and recovered claims, decided/approved approvals and their waits in seconds, validations, automatic approvals, retries; first_at/last_at bound the times counted. Written only by purge';
CREATE TABLE idemgate.effect_type_rollup (
    effect_type text PRIMARY KEY,
    completed   bigint NOT NULL DEFAULT 0,
    failed      bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE idemgate.effect_type_rollup IS
'Per effect type, the completed effects and dead-lettered failures of purged runs, so the Prometheus counters idemgate_effects_completed_total/failed_total never go down. Written only by purge';
SELECT pg_catalog.pg_extension_config_dump('idemgate.metrics_rollup', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_rollup', '');
REVOKE ALL ON idemgate.metrics_rollup, idemgate.effect_type_rollup FROM PUBLIC;

CREATE FUNCTION idemgate.effect_type_metrics()
RETURNS TABLE(effect_type text, pending bigint, oldest_pending_seconds double precision,
              unknown bigint, completed_total bigint, failed_total bigint, paused boolean)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_effect_type_metrics';
COMMENT ON FUNCTION idemgate.effect_type_metrics() IS
'Per effect type, what prometheus() exports: pending effects, age of the oldest pending one in seconds (0 when none), unknown effects, completed effects and dead-lettered failures since installation (purge keeps them), paused';

CREATE FUNCTION idemgate.alerts_firing()
RETURNS TABLE(alert text, severity text, subject text, count bigint)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_alerts_firing';
COMMENT ON FUNCTION idemgate.alerts_firing() IS
'The alerts firing now with their subject (effect type, workflow or database) and count: what prometheus() exports as idemgate_alerts_firing{alert, severity, subject}';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('reader', 'idemgate.effect_type_metrics()'),
    ('operator', 'idemgate.effect_type_metrics()'),
    ('reader', 'idemgate.alerts_firing()'),
    ('operator', 'idemgate.alerts_firing()');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.metrics_rollup');

-- Scrapes read whole tables (the per-type counts): never pay for JIT
-- compilation, which costs more than the query at these sizes.
ALTER FUNCTION idemgate.prometheus() SET jit = off;
ALTER FUNCTION idemgate.effect_type_metrics() SET jit = off;
ALTER FUNCTION idemgate.alerts_firing() SET jit = off;

COMMENT ON FUNCTION idemgate.prometheus() IS
'metrics() over the last 7 days in the Prometheus text exposition format: gauges named idemgate_*, windowed ones labelled window="7d"; per effect type (label effect_type) idemgate_effects_pending, _oldest_pending_seconds, _unknown, _completed_total, _failed_total, _paused; idemgate_dispatchers_running; idemgate_alerts_firing per alert';

-- Nothing new is executable by PUBLIC. Roles that already hold a bundle
-- (granted under 1.0) get its new members in 99_release_grants.sql.
REVOKE EXECUTE ON FUNCTION idemgate.pause_effect_type(text, text, text),
                          idemgate.resume_effect_type(text, text),
                          idemgate.unregister_endpoint(text, text),
                          idemgate.cancel_effect(uuid, text, text),
                          idemgate.cancel_approval(uuid, text, text),
                          idemgate.effect_type_metrics(),
                          idemgate.alerts_firing() FROM PUBLIC;
REVOKE ALL ON idemgate.effect_types FROM PUBLIC;
