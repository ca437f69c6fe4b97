-- sql/functions/distributed_alert_unsettled_runs.sql

-- alert_unsettled_runs on Citus: the same question asked of every shard,
-- and on one node it answers as the plain one (1.2 failed with 42703
-- there: no bucket column).
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
COMMENT ON FUNCTION idemgate.distributed_alert_unsettled_runs() IS
'alert_unsettled_runs on Citus, read on the coordinator';
REVOKE ALL ON FUNCTION idemgate.distributed_alert_unsettled_runs() FROM PUBLIC;
