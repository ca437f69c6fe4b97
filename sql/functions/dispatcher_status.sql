-- sql/functions/dispatcher_status.sql

CREATE OR REPLACE FUNCTION idemgate.dispatcher_status()
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
COMMENT ON FUNCTION idemgate.dispatcher_status() IS
'One row per running dispatcher (none without shared_preload_libraries): requests in flight, counters since it started (claimed, completed, failed, released back to pending by the kill switch or a pause), the database it serves (idemgate.database) and, on Citus, the node (every node''s, on the coordinator)';
REVOKE ALL ON FUNCTION idemgate.dispatcher_status() FROM PUBLIC;
