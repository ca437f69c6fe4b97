-- sql/1.1--1.2/45_dispatcher_node.sql — dispatcher_status() names the node
-- (docs/citus.md). The alert views use dispatcher_status(), so they are
-- dropped here and made again by 50_unsettled_runs.sql, where they are
-- defined; 99_release_grants.sql gives the bundles' roles SELECT back.
--
-- dispatcher_status() gains the node: on a distributed install the
-- coordinator shows every node's dispatchers. The result type changes, so
-- the function is made again; roles holding a bundle get EXECUTE back in
-- 99_release_grants.sql (bundle_members names it by signature).
-- node_dispatcher_status() is this node's part, what the coordinator asks
-- each worker for.
-- bundle_members names relations by oid (regclass): the reader's and the
-- operator's rows for alerts go with the view and come back with it in 50.
DELETE FROM idemgate.bundle_members WHERE rel OPERATOR(pg_catalog.=) 'idemgate.alerts'::pg_catalog.regclass;
DROP VIEW idemgate.alerts;
DROP VIEW idemgate.alert_instances;
DROP FUNCTION idemgate.dispatcher_status();
CREATE FUNCTION idemgate.node_dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz, database text, node text)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_dispatcher_status';
REVOKE ALL ON FUNCTION idemgate.node_dispatcher_status() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.node_dispatcher_status() IS
'This node''s running dispatchers (dispatcher_status() of one node); node is host:port on Citus, NULL on a single node';

CREATE FUNCTION idemgate.dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz, database text, node text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  distributed boolean := false;
BEGIN
  RETURN QUERY SELECT * FROM idemgate.node_dispatcher_status();
  -- Citus's catalogs exist only with Citus: looked at through EXECUTE.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition'
            ' WHERE logicalrelid OPERATOR(pg_catalog.=) ''idemgate.runs''::pg_catalog.regclass)'
            ' AND pg_catalog.citus_is_coordinator()'
      INTO distributed;
  END IF;
  IF distributed THEN
    RETURN QUERY
      SELECT x.* FROM pg_catalog.run_command_on_workers(
               'SELECT COALESCE(pg_catalog.json_agg(d), ''[]'') FROM idemgate.node_dispatcher_status() d') w,
             pg_catalog.json_to_recordset(w.result::pg_catalog.json) AS x(
               slot integer, pid integer, started_at timestamptz, in_flight integer,
               rounds bigint, claimed bigint, completed bigint, failed bigint,
               released bigint, last_round_at timestamptz, database text, node text)
       WHERE w.success;
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION idemgate.dispatcher_status() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.dispatcher_status() IS
'One row per running dispatcher (none without shared_preload_libraries): requests in flight, counters since it started (claimed, completed, failed, released back to pending by the kill switch or a pause), the database it serves (idemgate.database) and, on Citus, the node (every node''s, on the coordinator)';

