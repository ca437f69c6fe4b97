-- sql/1.1--1.2/62_distributed_alerts.sql — the alerts on Citus
-- (docs/citus.md). Three parts of idemgate.alert_instances read per-run
-- tables in ways Citus cannot run across shards: a recursive skip scan of
-- the pending effects, and look-ups correlated with each watched workflow
-- and each approved run. Each has a version here made of statements Citus
-- runs on every shard at once or on one, and idemgate.distribute() points
-- the view's function at it. The rest of the view runs on the coordinator
-- as it is. The search_path is pinned, so the operators are pg_catalog's.
-- Each is meant to run on the coordinator, in the view's last step; that
-- step reads reference tables, and where Citus does not run it locally
-- (citus.enable_local_execution off, EXPLAIN ANALYZE) it sends it to a
-- placement through a connection: there the function's own distributed
-- reads are nested, which Citus refuses unless allowed. They only read,
-- so allowing it costs nothing but that, in that case, they do not see
-- what the caller's transaction wrote and has not committed.

-- alert_pending_types on Citus. The effects wait on the workers, so here
-- (the coordinator's dispatcher) is replaced by: every node holding shards
-- of runs has a dispatcher serving this database, asked of the workers
-- (dispatcher_status()) only when HTTP effects are overdue. Without the
-- skip scan, each shard reads the entries of outbox_due_idx older than the
-- smaller threshold (an index-only pass, no heap reads for a healthy
-- backlog).
CREATE FUNCTION idemgate.distributed_alert_pending_types(stuck_after interval, missing_after interval,
                                                         here boolean)
RETURNS TABLE(effect_type text, stuck bigint, stuck_since timestamptz,
              overdue bigint, overdue_since timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  http_types text[] := ARRAY(SELECT ep.effect_type FROM idemgate.endpoints ep);
  types text[];
  stucks bigint[];
  stuck_sinces timestamptz[];
  overdues bigint[];
  overdue_sinces timestamptz[];
  served boolean := true;
BEGIN
  SELECT pg_catalog.array_agg(x.effect_type), pg_catalog.array_agg(x.stuck),
         pg_catalog.array_agg(x.stuck_since), pg_catalog.array_agg(x.overdue),
         pg_catalog.array_agg(x.overdue_since)
    INTO types, stucks, stuck_sinces, overdues, overdue_sinces
    FROM (SELECT o.effect_type,
                 pg_catalog.count(*) FILTER (WHERE o.next_attempt_at < pg_catalog.now() - stuck_after) AS stuck,
                 pg_catalog.min(o.next_attempt_at) FILTER (WHERE o.next_attempt_at < pg_catalog.now() - stuck_after) AS stuck_since,
                 pg_catalog.count(*) FILTER (WHERE o.effect_type = ANY (http_types)
                                               AND o.next_attempt_at <= pg_catalog.now() - missing_after) AS overdue,
                 pg_catalog.min(o.next_attempt_at) FILTER (WHERE o.effect_type = ANY (http_types)
                                                             AND o.next_attempt_at <= pg_catalog.now() - missing_after) AS overdue_since
            FROM idemgate.outbox o
           WHERE o.state = 'pending'
             AND o.next_attempt_at <= pg_catalog.now() - LEAST(stuck_after, missing_after)
           GROUP BY o.effect_type) x;
  IF 0 < ANY (overdues) THEN
    -- Citus's catalogs exist only with Citus: read through EXECUTE.
    EXECUTE $q$
      SELECT NOT EXISTS (
               SELECT 1 FROM pg_catalog.pg_dist_shard s
                 JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid
                 JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid
                WHERE s.logicalrelid = 'idemgate.runs'::pg_catalog.regclass
                  AND NOT EXISTS (SELECT 1 FROM idemgate.dispatcher_status() d
                                   WHERE d.database = pg_catalog.current_database()
                                     AND d.node = n.nodename || ':' || n.nodeport))
    $q$ INTO served;
  END IF;
  RETURN QUERY
    SELECT t.effect_type, t.stuck, t.stuck_since,
           CASE WHEN served THEN 0 ELSE t.overdue END,
           CASE WHEN NOT served THEN t.overdue_since END
      FROM unnest(types, stucks, stuck_sinces, overdues, overdue_sinces)
             AS t(effect_type, stuck, stuck_since, overdue, overdue_since);
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_alert_pending_types(interval, interval, boolean) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_pending_types(interval, interval, boolean) IS
'alert_pending_types on Citus, read on the coordinator: here is replaced by whether every node holding shards has a dispatcher serving this database';

-- alert_watched_workflows on Citus: per watched workflow, the latest run
-- and the latest duplicate or recovery, each a maximum Citus takes on
-- every shard (the ends of runs_workflow_created_idx and
-- events_claim_workflow_idx) and then of those.
CREATE FUNCTION idemgate.distributed_alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  w record;
  last_run timestamptz;
  last_claim timestamptz;
BEGIN
  FOR w IN SELECT ww.workflow, ww.expected_interval, ww.created_at
             FROM idemgate.watched_workflows ww ORDER BY ww.workflow LOOP
    SELECT pg_catalog.max(r.created_at) INTO last_run
      FROM idemgate.runs r WHERE r.workflow = w.workflow;
    SELECT pg_catalog.max(e.at) INTO last_claim
      FROM idemgate.events e
     WHERE e.kind IN ('recovered', 'duplicate') AND (e.details ->> 'workflow') = w.workflow;
    workflow := w.workflow;
    expected_interval := w.expected_interval;
    last_seen := GREATEST(w.created_at, last_run, last_claim);
    RETURN NEXT;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_alert_watched_workflows() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_watched_workflows() IS
'alert_watched_workflows on Citus, read on the coordinator';

-- alert_unsettled_runs on Citus: the same 1000 runs approved last (each
-- shard's latest, merged), then one read of their effects by bucket and
-- key, grouped per run (a group never spans shards).
CREATE FUNCTION idemgate.distributed_alert_unsettled_runs()
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
BEGIN
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
                 pg_catalog.bool_or(o.state <> ALL ('{completed,cancelled}'::text[])) AS open,
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
REVOKE ALL ON FUNCTION idemgate.distributed_alert_unsettled_runs() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_unsettled_runs() IS
'alert_unsettled_runs on Citus, read on the coordinator';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distributed_alert_pending_types(interval,interval,boolean)'),
    ('operator', 'idemgate.distributed_alert_watched_workflows()'),
    ('operator', 'idemgate.distributed_alert_unsettled_runs()');
