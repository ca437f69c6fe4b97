-- sql/1.0--1.1/10_release.sql — issue 8 (release and house).

-- events_claim_workflow_idx: 1.0 listed kind 'claimed', which no event row
-- has (a first claim writes no event; its time is runs.created_at). The
-- silence check (alert_instances' "watched" part) asks for the same two
-- kinds, so the planner can still prove the index's predicate from it.
DROP INDEX idemgate.events_claim_workflow_idx;
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate');

-- alert_instances as in 1.0, but for kind IN ('recovered', 'duplicate') in
-- "watched" (whoever redefines this view later: keep that predicate).
CREATE OR REPLACE VIEW idemgate.alert_instances AS
WITH settings AS (
    SELECT COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_failures', true), '')::bigint,
                    10) AS max_failures
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
)
SELECT r.alert, r.subject, r.severity,
       r.text || ' since '
         || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                             THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END)
         || r.suffix AS message,
       r.count, r.since
  FROM raised r;
