-- sql/1.1--1.2/64_distributed_privileges.sql — least-privilege roles on
-- Citus (docs/citus.md, "Roles"). Two things differ from one node:
--   - Citus reads a view's tables on the shards as the user who queries
--     the view, not as the view's owner (citusdata/citus#1683): a reader
--     granted SELECT on alerts would need the tables behind it. So
--     distribute() keeps each view of a bundle as an owner-only copy,
--     idemgate.distributed_<view>, read by a SECURITY DEFINER function,
--     idemgate.distributed_<view>_read(), and the view becomes a read of
--     that function: the same columns, the same grants, nothing more to
--     grant. A filter on such a view applies after it has read every
--     shard. A later version that redefines one of these views must, on
--     a distributed install, redefine its copy instead.
--   - Citus passes GRANTs on idemgate's tables on to their shards (and
--     shards copy their table's grants when they are made), but not USAGE
--     on the extension's schema: distributed_sync_grants(role) gives the
--     workers what the role holds on the coordinator; grant_role and
--     revoke_role call it, and distribute() for every role already
--     granted.

-- distributed_sync_grants(role): USAGE on schema idemgate on every worker
-- iff the role has it on the coordinator, and EXECUTE on the reader of
-- each wrapped view iff it may read the view. Returns the number of
-- workers (0 on a single node). Citus itself passes on GRANT and REVOKE
-- on idemgate's tables to their shards.
CREATE FUNCTION idemgate.distributed_sync_grants(role regrole) RETURNS integer
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
REVOKE ALL ON FUNCTION idemgate.distributed_sync_grants(regrole) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_sync_grants(regrole) IS
'Citus: give the workers the schema USAGE the role holds on the coordinator, and it EXECUTE on the readers of the views it may read (grant_role, revoke_role and distribute() call it; call it for each role after adding a worker); returns the number of workers, 0 on a single node';

-- distributed_wrap_view(view): the view reads through its owner-only
-- copy (see above). Both exist on the coordinator only: Citus is not asked
-- to make them on the workers (it refuses the view's dependency on the
-- function), so the function is not a bundle member (bundle_members is
-- a reference table, whose trigger checks functions on every node):
-- distributed_sync_grants gives EXECUTE on it to the roles that may read
-- the view.
CREATE FUNCTION idemgate.distributed_wrap_view(v regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET citus.enable_ddl_propagation = off
AS $$
DECLARE
  base text := (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = v);
  copy text := pg_catalog.format('idemgate.%I', 'distributed_' || base);
  reader text := pg_catalog.format('idemgate.%I', 'distributed_' || base || '_read');
BEGIN
  EXECUTE pg_catalog.format('CREATE VIEW %s AS %s', copy, pg_catalog.pg_get_viewdef(v));
  EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM PUBLIC', copy);
  EXECUTE pg_catalog.format(
    'CREATE FUNCTION %s() RETURNS SETOF %s LANGUAGE sql STABLE SECURITY DEFINER'
    ' SET search_path = pg_catalog, pg_temp AS %L',
    reader, copy, 'SELECT * FROM ' || copy);
  EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s() FROM PUBLIC', reader);
  EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s() IS %L', reader,
    'Citus: reads ' || v::text || ' as its owner (sql/1.1--1.2/64_distributed_privileges.sql)');
  EXECUTE pg_catalog.format('CREATE OR REPLACE VIEW %s AS SELECT * FROM %s()', v, reader);
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_wrap_view(regclass) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_wrap_view(regclass) IS
'Citus, called by distribute(): the view reads through a SECURITY DEFINER function over an owner-only copy of itself';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distributed_sync_grants(regrole)'),
    ('operator', 'idemgate.distributed_wrap_view(regclass)');
