-- sql/functions/distributed_wrap_view.sql

-- distributed_wrap_view(view): the view reads through its owner-only
-- copy (see above). Both exist on the coordinator only: Citus is not asked
-- to make them on the workers (it refuses the view's dependency on the
-- function), so the function is not a bundle member (bundle_members is
-- a reference table, whose trigger checks functions on every node):
-- distributed_sync_grants gives EXECUTE on it to the roles that may read
-- the view.
CREATE OR REPLACE FUNCTION idemgate.distributed_wrap_view(v regclass) RETURNS void
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
COMMENT ON FUNCTION idemgate.distributed_wrap_view(regclass) IS
'Citus, called by distribute(): the view reads through a SECURITY DEFINER function over an owner-only copy of itself';
REVOKE ALL ON FUNCTION idemgate.distributed_wrap_view(regclass) FROM PUBLIC;
