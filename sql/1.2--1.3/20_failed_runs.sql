-- sql/1.2--1.3/20_failed_runs.sql — a run whose effect failed for good
-- ends (docs/outbox.md, "Completing a run"). When every effect of an
-- approved run is settled and at least one failed, the run moves to
-- failed_terminal in the same transaction (src/ledger/run_completion.c,
-- CompleteLockedRuns), and terminal_failure fires at once naming its
-- workflow and key; reinjecting the effect's dead letter brings it back to
-- approved. Runs that 1.2 left approved for ever with a failed effect are
-- moved here, each with its state_changed event, so they are alerted and
-- later purged like any finished run.
WITH stranded AS (
    UPDATE idemgate.runs r
       SET state = 'failed_terminal', version = r.version OPERATOR(pg_catalog.+) 1,
           updated_at = pg_catalog.now()
     WHERE r.state OPERATOR(pg_catalog.=) 'approved'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key
                      AND o.state OPERATOR(pg_catalog.=) 'failed')
       AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o
                        WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key
                          AND o.state OPERATOR(pg_catalog.<>) ALL ('{completed,cancelled,failed}'::pg_catalog.text[]))
    RETURNING r.idempotency_key, r.version, r.workflow
)
INSERT INTO idemgate.events (idempotency_key, kind, actor, details)
SELECT s.idempotency_key, 'state_changed', 'ALTER EXTENSION idemgate UPDATE',
       pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
         'from', 'approved', 'to', 'failed_terminal', 'version', s.version,
         'workflow', s.workflow, 'reason', 'an effect failed for good',
         'failed_effects', (SELECT pg_catalog.jsonb_agg(o.effect_id ORDER BY o.created_at, o.effect_id)
                              FROM idemgate.outbox o
                             WHERE o.idempotency_key OPERATOR(pg_catalog.=) s.idempotency_key
                               AND o.state OPERATOR(pg_catalog.=) 'failed')))
  FROM stranded s;

-- unsettled_runs: a run approved with every effect settled, one of them
-- failed, is as stranded as one whose effects all completed (it should
-- have ended failed_terminal with its last effect).
CREATE OR REPLACE FUNCTION idemgate.alert_unsettled_runs()
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
           AND o.state <> ALL ('{completed,cancelled,failed}'::text[])
         LIMIT 1) IS NULL;
END;
COMMENT ON FUNCTION idemgate.alert_unsettled_runs() IS
'Part of idemgate.alert_instances: runs approved at least a minute ago (the last 1000) whose effects are all settled (completed, cancelled or failed), and when the last was settled';

-- Its distributed version (sql/1.1--1.2/62_distributed_alerts.sql) the
-- same way, and on one node it answers as the plain one (1.2 failed with
-- 42703 there: no bucket column).
CREATE OR REPLACE FUNCTION idemgate.distributed_alert_unsettled_runs()
RETURNS TABLE(workflow text, idempotency_key text, settled_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  workflows text[];
  keys text[];
  buckets integer[];
  approved_at timestamptz[];
  open_keys text[];
  last_keys text[];
  last_at timestamptz[];
  distributed boolean := false;
BEGIN
  -- On one node (no bucket column) the plain version answers.
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition'
            ' WHERE logicalrelid OPERATOR(pg_catalog.=) ''idemgate.runs''::pg_catalog.regclass)' INTO distributed;
  END IF;
  IF NOT distributed THEN
    RETURN QUERY SELECT * FROM idemgate.alert_unsettled_runs();
    RETURN;
  END IF;
  SELECT pg_catalog.array_agg(a.workflow), pg_catalog.array_agg(a.idempotency_key),
         pg_catalog.array_agg(a.bucket), pg_catalog.array_agg(a.updated_at)
    INTO workflows, keys, buckets, approved_at
    FROM (SELECT r.workflow, r.idempotency_key, r.bucket, r.updated_at
            FROM idemgate.runs r
           WHERE r.state = 'approved' AND r.updated_at < pg_catalog.now() - interval '1 minute'
           ORDER BY r.updated_at DESC
           LIMIT 1000) a;
  IF keys IS NULL THEN
    RETURN;
  END IF;
  SELECT pg_catalog.array_agg(x.idempotency_key) FILTER (WHERE x.open),
         pg_catalog.array_agg(x.idempotency_key), pg_catalog.array_agg(x.last_at)
    INTO open_keys, last_keys, last_at
    FROM (SELECT o.idempotency_key,
                 pg_catalog.bool_or(o.state <> ALL ('{completed,cancelled,failed}'::text[])) AS open,
                 pg_catalog.max(o.updated_at) AS last_at
            FROM idemgate.outbox o
           WHERE o.bucket = ANY (buckets) AND o.idempotency_key = ANY (keys)
           GROUP BY o.bucket, o.idempotency_key) x;
  RETURN QUERY
    SELECT a.workflow, a.idempotency_key, COALESCE(l.last_at, a.approved_at)
      FROM unnest(workflows, keys, approved_at) AS a(workflow, idempotency_key, approved_at)
      LEFT JOIN unnest(last_keys, last_at) AS l(idempotency_key, last_at)
        ON l.idempotency_key = a.idempotency_key
     WHERE a.idempotency_key <> ALL (COALESCE(open_keys, '{}'));
END
$$;
