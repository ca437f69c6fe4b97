-- sql/functions/alert_unsettled_runs.sql

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
REVOKE ALL ON FUNCTION idemgate.alert_unsettled_runs() FROM PUBLIC;
