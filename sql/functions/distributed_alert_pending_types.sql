-- sql/functions/distributed_alert_pending_types.sql

-- alert_pending_types on Citus. The effects wait on the workers, so here
-- (the coordinator's dispatcher) is replaced by: every node holding shards
-- of runs has a dispatcher serving this database, asked of the workers
-- (dispatcher_status()) only when HTTP effects are overdue. Without the
-- skip scan, each shard reads the entries of outbox_due_idx older than the
-- smaller threshold (an index-only pass, no heap reads for a healthy
-- backlog).
CREATE OR REPLACE FUNCTION idemgate.distributed_alert_pending_types(stuck_after interval, missing_after interval,
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
COMMENT ON FUNCTION idemgate.distributed_alert_pending_types(interval, interval, boolean) IS
'alert_pending_types on Citus, read on the coordinator: here is replaced by whether every node holding shards has a dispatcher serving this database';
REVOKE ALL ON FUNCTION idemgate.distributed_alert_pending_types(interval,interval,boolean) FROM PUBLIC;
