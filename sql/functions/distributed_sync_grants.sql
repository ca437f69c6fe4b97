-- sql/functions/distributed_sync_grants.sql

-- distributed_sync_grants(role): USAGE on schema idemgate on every worker
-- iff the role has it on the coordinator, and EXECUTE on the reader of
-- each wrapped view iff it may read the view. Returns the number of
-- workers (0 on a single node). Citus itself passes on GRANT and REVOKE
-- on idemgate's tables to their shards.
CREATE OR REPLACE FUNCTION idemgate.distributed_sync_grants(role regrole) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  f record;
  n integer;
  name text := pg_catalog.quote_ident(role::text);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
    RETURN 0;
  END IF;
  -- The readers of wrapped views (distributed_wrap_view).
  FOR f IN SELECT p.oid::pg_catalog.regprocedure AS fn, c.oid::pg_catalog.regclass AS v
             FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_class c
               ON c.relname = pg_catalog.substring(p.proname, '^distributed_(.*)_read$')
              AND c.relnamespace = 'idemgate'::pg_catalog.regnamespace
            WHERE p.pronamespace = 'idemgate'::pg_catalog.regnamespace LOOP
    EXECUTE pg_catalog.format(CASE WHEN pg_catalog.has_table_privilege(role, f.v, 'SELECT')
                                   THEN 'GRANT EXECUTE ON FUNCTION %s TO %s'
                                   ELSE 'REVOKE EXECUTE ON FUNCTION %s FROM %s' END, f.fn, name);
  END LOOP;
  -- Citus's functions exist only with Citus: through EXECUTE.
  EXECUTE 'SELECT pg_catalog.count(*)::integer FROM pg_catalog.run_command_on_workers($1)'
    USING CASE WHEN pg_catalog.has_schema_privilege(role, 'idemgate', 'USAGE')
               THEN 'GRANT USAGE ON SCHEMA idemgate TO ' || name
               ELSE 'REVOKE USAGE ON SCHEMA idemgate FROM ' || name END
    INTO n;
  RETURN n;
END
$$;
COMMENT ON FUNCTION idemgate.distributed_sync_grants(regrole) IS
'Citus: give the workers the schema USAGE the role holds on the coordinator, and it EXECUTE on the readers of the views it may read (grant_role, revoke_role and distribute() call it; call it for each role after adding a worker); returns the number of workers, 0 on a single node';
REVOKE ALL ON FUNCTION idemgate.distributed_sync_grants(regrole) FROM PUBLIC;
