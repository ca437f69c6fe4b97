-- sql/functions/distribute_tombstones.sql

-- distribute_tombstones(): on the coordinator of an install whose runs are
-- distributed, give tombstones their bucket and a primary key that
-- includes it on every node, and distribute them co-located with runs.
-- distribute() calls it; an install distributed under 1.2 calls it once
-- after ALTER EXTENSION idemgate UPDATE on every node.
CREATE OR REPLACE FUNCTION idemgate.distribute_tombstones() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  w record;
  ddl text := $ddl$
    ALTER TABLE idemgate.tombstones ADD COLUMN IF NOT EXISTS bucket integer;
    UPDATE idemgate.tombstones SET bucket = ((key_digest >> 48) & 65535)::integer WHERE bucket IS NULL;
    ALTER TABLE idemgate.tombstones ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT tombstones_pkey,
      ADD CONSTRAINT tombstones_pkey PRIMARY KEY (key_digest, bucket);
  $ddl$;
BEGIN
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL
     OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
                     WHERE logicalrelid OPERATOR(pg_catalog.=) 'idemgate.runs'::pg_catalog.regclass) THEN
    RAISE EXCEPTION 'idemgate is not distributed'
      USING ERRCODE = '0A000', HINT = 'Call idemgate.distribute() first; it distributes the tombstones too.';
  END IF;
  -- Endpoint circuits (38_endpoint_circuits.sql): a reference table, so
  -- one node's probe decides for every node.
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
                  WHERE logicalrelid OPERATOR(pg_catalog.=) 'idemgate.endpoint_circuits'::pg_catalog.regclass) THEN
    EXECUTE 'SELECT pg_catalog.create_reference_table(''idemgate.endpoint_circuits'')';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
              WHERE logicalrelid OPERATOR(pg_catalog.=) 'idemgate.tombstones'::pg_catalog.regclass) THEN
    RETURN;
  END IF;
  LOCK TABLE idemgate.tombstones IN ACCESS EXCLUSIVE MODE;
  FOR w IN EXECUTE 'SELECT * FROM pg_catalog.run_command_on_workers($1)' USING ddl LOOP
    IF NOT w.success THEN
      RAISE EXCEPTION 'could not prepare idemgate.tombstones on worker %:%: %', w.nodename, w.nodeport, w.result
        USING ERRCODE = '55000',
              HINT = 'Every worker needs idemgate 1.3 (ALTER EXTENSION idemgate UPDATE on each); then call this again.';
    END IF;
  END LOOP;
  EXECUTE ddl;
  EXECUTE 'SELECT pg_catalog.create_distributed_table(''idemgate.tombstones'', ''bucket'', colocate_with => ''idemgate.runs'')';
END
$$;
COMMENT ON FUNCTION idemgate.distribute_tombstones() IS
'Citus: distribute idemgate.tombstones by bucket, co-located with runs (distribute() calls it; call it once on an install distributed before 1.3, after updating every node)';
REVOKE ALL ON FUNCTION idemgate.distribute_tombstones() FROM PUBLIC;
