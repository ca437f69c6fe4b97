\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.1'" to load this file. \quit

-- idemgate 1.0 → 1.1. Every schema change of version 1.1 lives in this
-- directory, one file per feature, applied in name order. A fresh
-- CREATE EXTENSION runs idemgate--1.0.sql and then this script, so a fresh
-- install and an updated one are the same by construction (TAP 100 checks).
-- sql/1.0--1.1/10_release.sql — issue 8 (release and house).

-- events_claim_workflow_idx: 1.0 listed kind 'claimed', which no event row
-- has (a first claim writes no event; its time is runs.created_at). The
-- silence check (alert_instances' "watched" part, redefined in
-- 30_operations.sql) asks for the same two kinds, so the planner can still
-- prove the index's predicate from it.
DROP INDEX idemgate.events_claim_workflow_idx;
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate');

-- n8n request forms (SPEC §13, src/request_forms.c). Every function a
-- workflow calls also takes its whole request as ONE jsonb argument whose
-- fields are the typed arguments' names: n8n's Postgres node pastes query
-- parameters as literals and splits plain ones on commas, so the robust
-- call is SELECT * FROM idemgate.f($1::jsonb) with JSON.stringify({...}).
-- Same results, errors and bundle as the typed form; unknown field → 22023,
-- missing required field → 22004; single-row forms always give one row.

-- Each form is declared like its typed function (result, volatility, ROWS)
-- as SECURITY DEFINER with a pinned search_path, C symbol
-- idemgate_<name>_request, a comment naming its fields, and no EXECUTE for
-- PUBLIC. One row a form: name, RETURNS, volatility, ROWS (NULL: not a
-- set), fields, and what the comment adds. (CREATE EXTENSION replaces
-- MODULE_PATHNAME in the whole script, this block included. TAP 100
-- checks that a fresh install equals an updated one, pg_dump included.)
DO $forms$
DECLARE
    f record;
BEGIN
    FOR f IN
        SELECT * FROM (VALUES
            ('request_approval', 'TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)',
             'VOLATILE', 1, 'key, owner, version, effects, expires_in, card, audience, requested_by', ''),
            ('peek_approval', 'TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
                                     expires_at timestamptz, card jsonb, effects jsonb)',
             'STABLE', 1, 'token', '; always one row, status invalid (other columns NULL) for an unknown token'),
            ('consume_approval', 'TABLE(outcome text, idempotency_key text, effect_ids uuid[])',
             'VOLATILE', 1, 'token, decision, approver, reason', ''),
            ('enqueue_effect', 'TABLE(effect_ids uuid[], version bigint)',
             'VOLATILE', 1, 'key, owner, version, effects', ''),
            ('cas_transition', 'bigint', 'VOLATILE', NULL, 'key, owner, version, new_state, result', ''),
            ('renew_lease', 'timestamptz', 'VOLATILE', NULL, 'key, owner, version, extend_by', ''),
            ('fail', 'text', 'VOLATILE', NULL, 'key, owner, version, error_class, error, retryable', ''),
            ('record_validation', 'TABLE(valid boolean, errors jsonb, attempt integer)',
             'VOLATILE', 1, 'key, owner, version, output, schema', ''),
            ('claim_effects', 'TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
                                     payload jsonb, attempt integer, lease_owner uuid)',
             'VOLATILE', 10, 'effect_type, batch, lease', ''),
            ('complete_effect', 'boolean', 'VOLATILE', NULL, 'effect_id, owner, provider_id, status', ''),
            ('fail_effect', 'text', 'VOLATILE', NULL, 'effect_id, owner, error_class, error, retry_after, status', '')
        ) AS forms(name, result, volatility, nrows, fields, note)
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION idemgate.%I(request jsonb) RETURNS %s
             LANGUAGE C %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp %s
             AS %L, %L',
            f.name, f.result, f.volatility, 'ROWS ' || f.nrows,
            'MODULE_PATHNAME', 'idemgate_' || f.name || '_request');
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION idemgate.%I(jsonb) IS %L', f.name,
            pg_catalog.format('%s() with its %s in one JSON object {%s}: the form for n8n%s',
                              f.name,
                              CASE WHEN pg_catalog.strpos(f.fields, ',') > 0 THEN 'arguments' ELSE 'argument' END,
                              f.fields, f.note));
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION idemgate.%I(jsonb) FROM PUBLIC', f.name);
    END LOOP;
END
$forms$;

-- Each form joins its typed function's bundle, and operator (which holds
-- everything).
WITH forms(bundle, fn) AS (VALUES
    ('client', 'idemgate.request_approval(jsonb)'),
    ('client', 'idemgate.enqueue_effect(jsonb)'),
    ('client', 'idemgate.cas_transition(jsonb)'),
    ('client', 'idemgate.renew_lease(jsonb)'),
    ('client', 'idemgate.fail(jsonb)'),
    ('client', 'idemgate.record_validation(jsonb)'),
    ('client', 'idemgate.claim_effects(jsonb)'),
    ('client', 'idemgate.complete_effect(jsonb)'),
    ('client', 'idemgate.fail_effect(jsonb)'),
    ('approver', 'idemgate.peek_approval(jsonb)'),
    ('approver', 'idemgate.consume_approval(jsonb)'))
INSERT INTO idemgate.bundle_members (bundle, fn)
SELECT bundle, fn FROM forms
UNION ALL
SELECT 'operator', fn FROM forms;

-- Roles that already hold a bundle get its new members from 99_release_grants.sql
-- (which also skips roles dropped since, and keeps the grants out of pg_init_privs).

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
-- Hardening (issue 11, SPEC §15; C in src/pull_grants.c, src/identity.c,
-- src/destinations.c, src/doc_limits.c and src/privileges.c).

-- Pull API per effect type: a client may claim_effects (and complete or
-- fail) only the types granted to it; a type with a registered endpoint
-- belongs to the dispatcher and only an operator may pull it.
CREATE TABLE idemgate.effect_type_grants (
    role        regrole NOT NULL,
    effect_type text NOT NULL,
    granted_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by  text,
    PRIMARY KEY (effect_type, role)
);
COMMENT ON TABLE idemgate.effect_type_grants IS
'Which roles may pull (claim_effects, complete_effect, fail_effect) which effect types; maintained by grant_effect_type and revoke_effect_type';
SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_grants', '');
REVOKE ALL ON idemgate.effect_type_grants FROM PUBLIC;

CREATE FUNCTION idemgate.grant_effect_type(role regrole, effect_type text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_effect_type';
COMMENT ON FUNCTION idemgate.grant_effect_type(regrole, text) IS
'Let a role pull effects of one type with claim_effects / complete_effect / fail_effect (types without an endpoint; a type with an endpoint belongs to the dispatcher)';

CREATE FUNCTION idemgate.revoke_effect_type(role regrole, effect_type text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_effect_type';
COMMENT ON FUNCTION idemgate.revoke_effect_type(regrole, text) IS
'Stop a role pulling effects of one type; false when it had no such grant';

REVOKE EXECUTE ON FUNCTION idemgate.grant_effect_type(regrole, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION idemgate.revoke_effect_type(regrole, text) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.grant_effect_type(regrole,text)'),
    ('operator', 'idemgate.revoke_effect_type(regrole,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.effect_type_grants');

-- Roles that already hold a bundle get its new members from 99_release_grants.sql
-- (which also skips roles dropped since, and keeps the grants out of pg_init_privs).

-- ---------------------------------------------------------------------------
-- 45_dispatch.sql — the dispatcher parts of issues 10 and 11 (SPEC §14, §15).
-- ---------------------------------------------------------------------------

-- The kill switch and type pauses as a send barrier (src/send_barrier.c):
-- a transaction that switches actions off or pauses a type makes every
-- dispatcher stop writing new requests before it commits. Row triggers,
-- so set_actions_enabled, pause_effect_type, a direct UPDATE and a
-- pg_dump restore are all covered.
CREATE FUNCTION idemgate.hold_sends_trigger() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_hold_sends_trigger';
COMMENT ON FUNCTION idemgate.hold_sends_trigger() IS
'Trigger: the switch-off or pause being written holds every dispatcher''s new requests from its commit on (no first byte after the commit)';
REVOKE ALL ON FUNCTION idemgate.hold_sends_trigger() FROM PUBLIC;
CREATE TRIGGER hold_sends_on_switch_off AFTER INSERT OR UPDATE ON idemgate.control
FOR EACH ROW WHEN (NOT NEW.actions_enabled) EXECUTE FUNCTION idemgate.hold_sends_trigger();
CREATE TRIGGER hold_sends_on_pause AFTER INSERT OR UPDATE ON idemgate.paused_effect_types
FOR EACH ROW EXECUTE FUNCTION idemgate.hold_sends_trigger();

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.hold_sends_trigger()');

-- Per-endpoint limits (SPEC §14, src/rate_limit.c): register_endpoint gains
-- rate_limit (requests per second) and max_in_flight (concurrent requests
-- to this endpoint); NULL = none / the global idemgate.max_in_flight. The
-- dispatchers keep them together (shared memory).
ALTER TABLE idemgate.endpoints
    ADD COLUMN rate_limit double precision,
    ADD COLUMN max_in_flight integer;
COMMENT ON COLUMN idemgate.endpoints.rate_limit IS
'Most requests per second to this endpoint (over any one-second window), NULL = no limit';
COMMENT ON COLUMN idemgate.endpoints.max_in_flight IS
'Most concurrent requests to this endpoint, NULL = only the global idemgate.max_in_flight';

DROP FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text);
CREATE FUNCTION idemgate.register_endpoint(effect_type text, url text,
                                           timeout interval DEFAULT '10 seconds',
                                           max_attempts integer DEFAULT 3,
                                           honors_idempotency_key boolean DEFAULT false,
                                           headers jsonb DEFAULT '{}',
                                           provider_id_field text DEFAULT 'id',
                                           rate_limit double precision DEFAULT NULL,
                                           max_in_flight integer DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_endpoint';
COMMENT ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer) IS
'Create or replace the HTTP endpoint of an effect type: https, or http only to hosts in idemgate.allowed_http_hosts; extra headers may not override Content-Type, Idempotency-Key, Host or Content-Length; rate_limit (requests/s) and max_in_flight (concurrent requests) limit what the dispatchers send to it';
REVOKE ALL ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer) FROM PUBLIC;
UPDATE idemgate.bundle_members
   SET fn = 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text)';

-- Performance (issue 12). Works the same on a fresh install (1.0 + this
-- update) and on a populated 1.0 database.

-- 1. Integrity rules of the hot tables move from CHECK constraints into the
-- C code. PostgreSQL 15 rebuilds a table's CHECK expressions from their
-- stored text (stringToNode) for every SPI execution that writes the table:
-- about 10 µs per claim. Every writer of these columns is our own C code:
--   runs.idempotency_key 1..512 bytes  CheckKeyText (src/args.c), on every key argument
--   runs.state one of the six states   SetRunState refuses any other (src/runs.c);
--                                      the claim statement writes 'processing'
--   outbox.state one of the five       literals in src/outbox.c, src/dispatcher.c,
--                                      src/deadletters.c
-- test/sql/integrity_rules.sql shows each rule still holds.
ALTER TABLE idemgate.runs DROP CONSTRAINT IF EXISTS runs_idempotency_key_check;
ALTER TABLE idemgate.runs DROP CONSTRAINT IF EXISTS runs_state_check;
ALTER TABLE idemgate.outbox DROP CONSTRAINT IF EXISTS outbox_state_check;
COMMENT ON COLUMN idemgate.runs.state IS
'processing, awaiting_human, approved, completed, failed_retryable or failed_terminal (kept by the C code, see test/sql/integrity_rules.sql)';
COMMENT ON COLUMN idemgate.outbox.state IS
'pending, sending, completed, unknown, failed or cancelled (kept by the C code, see test/sql/integrity_rules.sql)';

-- 2. The silence alert asks for the last run of each watched workflow. A
-- run without a workflow can never be watched, so it is left out of the
-- index: claims without a workflow pay no second index insert.
DROP INDEX IF EXISTS idemgate.runs_workflow_created_idx;
CREATE INDEX runs_workflow_created_idx ON idemgate.runs (workflow, created_at)
    WHERE workflow IS NOT NULL;

-- 3. The partial indexes the claim and the settle step walk get one entry
-- per state change, and the entries of effects that moved on stay until
-- vacuum. A plain index scan marks them dead on its first visit
-- (kill_prior_tuple) so later scans skip them, but not inside a
-- deduplicated posting list (one index tuple for many rows with the same
-- key: a backlog enqueued in one transaction shares next_attempt_at), which
-- every claim then walked again, heap visit by heap visit (bench/dispatch:
-- 352 µs of dispatcher CPU per effect for such a backlog, 189 µs
-- otherwise). So no deduplication on these two.
ALTER INDEX idemgate.outbox_due_idx SET (deduplicate_items = off);
ALTER INDEX idemgate.outbox_sending_idx SET (deduplicate_items = off);
REINDEX INDEX idemgate.outbox_due_idx;
REINDEX INDEX idemgate.outbox_sending_idx;

-- 4. A delivery and the completion of a run by its effects are recorded by
-- the rows themselves, as a first claim already is (1.0): a completed
-- effect keeps its provider id, HTTP status, attempts and time
-- (updated_at), a completed run its version and time, and neither ever
-- changes again. The two event rows each effect used to add (half of the
-- bytes of a run and a third of the dispatcher's work per effect) are no
-- longer written; key_history shows the same entries as before, from the
-- rows, and gets the effect_id an entry is about.
CREATE OR REPLACE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key)) AS details,
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
COMMENT ON VIEW idemgate.key_history IS
'Everything that happened to each key: its first claim (from runs), every event, each delivered effect (from outbox) and the completion of a run by its effects (from runs), for "did we process this key?" and "did we send?"';

-- 5. Retention reads only what it deletes (src/retention.c): purge also
-- asks created_at < bound (implied by updated_at < bound), and this BRIN
-- index finds those runs in the old page ranges without reading the recent
-- ones. autosummarize summarises each filled range as it is left behind.
CREATE INDEX runs_created_brin ON idemgate.runs USING brin (created_at)
    WITH (autosummarize = on);

-- 6. The foreign keys of outbox and approvals to runs go, for the reason
-- the CHECK constraints went (1.): every writer is our C code, and a
-- foreign key costs a trigger per row. Deleting a run fired two cascade
-- triggers, each a query, although purge deletes the children itself
-- first: 90% of purging 200,000 runs (13.7 of 15 s). Inserting a child
-- ran a key-share check of its run. The rule the keys kept, "every effect
-- and approval has its run", is kept so:
--   insert  effects (InsertEffects) and approvals (request_approval) are
--           only inserted for a run this transaction holds locked FOR UPDATE;
--   delete  runs are deleted only by purge, which deletes their approvals,
--           effects, dead letters and events in the same statement; no
--           bundle grants DELETE on runs.
-- test/sql/integrity_rules.sql shows both.
ALTER TABLE idemgate.outbox DROP CONSTRAINT IF EXISTS outbox_idempotency_key_fkey;
ALTER TABLE idemgate.approvals DROP CONSTRAINT IF EXISTS approvals_idempotency_key_fkey;

-- 5. A duplicate claim writes an event row; of its four index entries, the
-- one in events_claim_workflow_idx is only ever looked up by workflow (the
-- silence alert: details->>'workflow' = the watched workflow, which implies
-- it is not null, so the planner still proves this predicate). Claims
-- without a workflow no longer put a NULL entry there: one index insert
-- and ~70 bytes of WAL less per such duplicate (bench/claim).
DROP INDEX idemgate.events_claim_workflow_idx;
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate')
      AND (details OPERATOR(pg_catalog.->>) 'workflow') IS NOT NULL;
-- sql/1.0--1.1/99_release_grants.sql — issue 8 (release). Runs last.
--
-- Roles that already hold a bundle (granted_bundles: grant_role under the
-- old version) get every member this update added to it, as grant_role
-- gives them in a fresh install; the feature files above only insert their
-- new functions and tables into bundle_members.
--
-- PostgreSQL records every GRANT run inside an extension script as an
-- initial privilege of the object (pg_init_privs), and pg_dump leaves
-- initial privileges out of a dump: a dump of the updated database would
-- restore without these grants. They are the DBA's grants (grant_role),
-- not the extension's, so they are taken out of pg_init_privs again, for
-- every member object, whichever script granted them. TAP 100 checks that
-- an updated database has the same ACLs, initial privileges and pg_dump
-- output as a fresh install whose roles got the same bundles.
DO $$
DECLARE g record;
BEGIN
  -- A role dropped since grant_role (DROP OWNED + DROP ROLE) leaves its
  -- granted_bundles row behind: skipped, or the whole update would fail.
  FOR g IN SELECT DISTINCT gb.role::pg_catalog.text AS role, m.fn, m.rel::pg_catalog.text AS rel
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
             JOIN idemgate.bundle_members m ON m.bundle OPERATOR(pg_catalog.=) gb.bundle
            ORDER BY 1, 2, 3
  LOOP
    IF g.fn IS NOT NULL THEN
      EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', g.fn, g.role);
    ELSE
      EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %s', g.rel, g.role);
    END IF;
  END LOOP;
END $$;

UPDATE pg_catalog.pg_init_privs p
   SET initprivs = ARRAY(SELECT a FROM pg_catalog.unnest(p.initprivs) WITH ORDINALITY AS u(a, n)
                          WHERE NOT EXISTS (
                                SELECT 1 FROM pg_catalog.aclexplode(ARRAY[u.a]) x
                                  JOIN idemgate.granted_bundles gb
                                    ON gb.role::pg_catalog.oid OPERATOR(pg_catalog.=) x.grantee
                                 WHERE x.grantee OPERATOR(pg_catalog.<>) e.extowner)
                          ORDER BY u.n)
  FROM pg_catalog.pg_extension e, pg_catalog.pg_depend d
 WHERE e.extname OPERATOR(pg_catalog.=) 'idemgate'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) e.oid
   AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND p.classoid OPERATOR(pg_catalog.=) d.classid
   AND p.objoid OPERATOR(pg_catalog.=) d.objid
   AND p.privtype OPERATOR(pg_catalog.=) 'e';
