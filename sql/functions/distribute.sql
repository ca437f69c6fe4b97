-- sql/functions/distribute.sql

-- distribute(): idemgate on Citus (docs/citus.md). The per-run tables,
-- tombstones included, are locked together and distributed by bucket,
-- co-located with runs; the installation secret is a reference table: one
-- secret, so the keyed hashes of every node agree.
CREATE OR REPLACE FUNCTION idemgate.distribute(shard_count integer DEFAULT 32) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t text;
  w record;
  v record;
  r record;
  ddl text;
  worker_ddl text;
  def text;
  newdef text;
  all_tables text;
  attempt integer;
  locked boolean := false;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
    RAISE EXCEPTION 'idemgate.distribute needs the citus extension in this database'
      USING ERRCODE = '0A000',
            HINT = 'Preload citus before idemgate (shared_preload_libraries = ''citus,idemgate''), CREATE EXTENSION citus, add the workers, then call idemgate.distribute() on the coordinator.';
  END IF;
  IF NOT pg_catalog.citus_is_coordinator() THEN
    RAISE EXCEPTION 'idemgate.distribute runs on the Citus coordinator only'
      USING ERRCODE = '0A000',
            HINT = 'Connect to the coordinator and call it there.';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
              WHERE logicalrelid OPERATOR(pg_catalog.=) 'idemgate.runs'::pg_catalog.regclass) THEN
    RAISE NOTICE 'idemgate is already distributed; nothing changed';
    RETURN;
  END IF;
  IF shard_count IS NULL OR shard_count NOT BETWEEN 1 AND 64000 THEN
    RAISE EXCEPTION 'shard_count must be between 1 and 64000, got %', shard_count
      USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node
                  WHERE noderole OPERATOR(pg_catalog.=) 'primary' AND shouldhaveshards
                    AND groupid OPERATOR(pg_catalog.<>) 0) THEN
    RAISE EXCEPTION 'the Citus cluster has no worker to hold shards'
      USING ERRCODE = '0A000',
            HINT = 'Add workers with citus_add_node first.';
  END IF;

  -- Nothing may read or write the tables while they change hands: every
  -- idemgate table at once or none (NOWAIT, retried). A dispatcher's
  -- statement locks its tables one by one; had we waited holding some, it
  -- could hold one we need while it waits for one we hold — a deadlock
  -- that cancelled distribute(). A worker's dispatcher leaves its tables
  -- alone until distribute() is done (src/citus/distributed.c).
  all_tables := (SELECT pg_catalog.string_agg(c.oid::pg_catalog.regclass::text, ', ' ORDER BY c.oid)
                   FROM pg_catalog.pg_class c
                  WHERE c.relnamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace
                    AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'));
  FOR attempt IN 1..1200 LOOP
    BEGIN
      EXECUTE 'LOCK TABLE ' OPERATOR(pg_catalog.||) all_tables OPERATOR(pg_catalog.||) ' IN ACCESS EXCLUSIVE MODE NOWAIT';
      locked := true;
    EXCEPTION WHEN lock_not_available THEN
      PERFORM pg_catalog.pg_sleep(0.05);
    END;
    EXIT WHEN locked;
  END LOOP;
  IF NOT locked THEN
    RAISE EXCEPTION 'could not lock idemgate''s tables within 60 s'
      USING ERRCODE = '55P03',
            HINT = 'A long transaction holds one of them (pg_locks names it); end it and call idemgate.distribute() again.';
  END IF;
  PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
  -- control and paused_effect_types keep their send-barrier triggers on
  -- every copy (src/delivery/send_barrier.c); bundle_members its canonical-name one.
  PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);

  -- The bucket column and the keys that include it (Citus enforces a key
  -- on one shard only when it includes the distribution column; the names
  -- stay). The workers got the extension's tables with CREATE EXTENSION,
  -- outside Citus: their copies (empty, used to plan) change the same way.
  ddl := $ddl$
    ALTER TABLE idemgate.runs ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.outbox ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.approvals ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.events ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.dead_letters ADD COLUMN IF NOT EXISTS bucket integer;
    UPDATE idemgate.runs SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.outbox SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.approvals SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.dead_letters SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.events SET bucket = COALESCE(idemgate.key_bucket(idempotency_key), 0) WHERE bucket IS NULL;
    ALTER TABLE idemgate.runs ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT runs_pkey,
      ADD CONSTRAINT runs_pkey PRIMARY KEY (idempotency_key, bucket);
    ALTER TABLE idemgate.outbox ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT outbox_pkey,
      ADD CONSTRAINT outbox_pkey PRIMARY KEY (effect_id, bucket),
      DROP CONSTRAINT outbox_idempotency_key_effect_type_target_key,
      ADD CONSTRAINT outbox_idempotency_key_effect_type_target_key
        UNIQUE (idempotency_key, effect_type, target, bucket);
    ALTER TABLE idemgate.approvals ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT approvals_pkey,
      ADD CONSTRAINT approvals_pkey PRIMARY KEY (approval_id, bucket),
      DROP CONSTRAINT approvals_token_hash_key,
      ADD CONSTRAINT approvals_token_hash_key UNIQUE (token_hash, bucket);
    ALTER TABLE idemgate.events ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT events_pkey,
      ADD CONSTRAINT events_pkey PRIMARY KEY (id, bucket);
    ALTER TABLE idemgate.dead_letters ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT dead_letters_pkey,
      ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id, bucket);
  $ddl$;
  -- Rows written on a worker (its dispatcher's events) take their ids from
  -- that worker's own identity sequence: each node counts in its own range,
  -- group id << 48, as Citus gives its own sequences on workers.
  worker_ddl := ddl || $seq$
    DO $restart$
    DECLARE
      g bigint := (SELECT groupid FROM pg_catalog.pg_dist_local_group);
    BEGIN
      EXECUTE pg_catalog.format('ALTER TABLE idemgate.events ALTER COLUMN id RESTART WITH %s', (g << 48) + 1);
      EXECUTE pg_catalog.format('ALTER TABLE idemgate.dead_letters ALTER COLUMN id RESTART WITH %s', (g << 48) + 1);
    END
    $restart$;
  $seq$;
  FOR w IN SELECT * FROM pg_catalog.run_command_on_workers(worker_ddl) LOOP
    IF NOT w.success THEN
      RAISE EXCEPTION 'could not prepare idemgate''s tables on worker %:%: %', w.nodename, w.nodeport, w.result
        USING ERRCODE = '55000',
              HINT = 'Every worker needs the same idemgate version (CREATE EXTENSION propagated by Citus); fix the worker and call idemgate.distribute() again.';
    END IF;
  END LOOP;
  EXECUTE ddl;

  -- Configuration: a copy on every node.
  FOREACH t IN ARRAY ARRAY['control', 'endpoints', 'watched_workflows', 'bundle_members',
                           'granted_bundles', 'paused_effect_types', 'alert_state',
                           'metrics_rollup', 'effect_type_rollup', 'run_metrics_rollup',
                           'effect_type_grants', 'effect_type_policies', 'installation_secret',
                           'endpoint_circuits'] LOOP
    PERFORM pg_catalog.create_reference_table(pg_catalog.format('idemgate.%I', t)::pg_catalog.regclass);
  END LOOP;

  -- Per-run tables: one shard group per bucket range.
  PERFORM pg_catalog.create_distributed_table('idemgate.runs', 'bucket',
                                              shard_count => shard_count, colocate_with => 'none');
  FOREACH t IN ARRAY ARRAY['outbox', 'approvals', 'events', 'dead_letters'] LOOP
    PERFORM pg_catalog.create_distributed_table(pg_catalog.format('idemgate.%I', t)::pg_catalog.regclass,
                                                'bucket', colocate_with => 'idemgate.runs');
  END LOOP;
  PERFORM idemgate.distribute_tombstones();
  -- The secret exists from here on: made on a worker's first keyed hash,
  -- it would be a write of a reference table, a two-phase commit, in a
  -- claim.
  PERFORM idemgate.payload_hmac('\x00'::pg_catalog.bytea);

  -- A claim that is its whole transaction runs on its key's node
  -- (66_claim_in_bucket.sql): the function goes with the bucket's shard.
  PERFORM pg_catalog.create_distributed_function(
    'idemgate.claim_in_bucket(integer,text,jsonb,interval,text,uuid,text)'::pg_catalog.regprocedure,
    '$1', colocate_with => 'idemgate.runs');

  -- The views join per-run tables on the key or the effect id; Citus runs
  -- such a join shard by shard only when it also joins on bucket (the same
  -- for the same key): each join of two such columns gains it. A view this
  -- cannot fix keeps its definition (docs/citus.md, "Limits").
  FOR v IN SELECT c.oid::pg_catalog.regclass AS rel FROM pg_catalog.pg_class c
            WHERE c.relnamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace
              AND c.relkind OPERATOR(pg_catalog.=) 'v'
            ORDER BY c.oid LOOP
    def := pg_catalog.pg_get_viewdef(v.rel);
    newdef := pg_catalog.regexp_replace(def,
      '\((\w+)\.(idempotency_key|effect_id) = (\w+)\.\2\)',
      '((\1.\2 = \3.\2) AND (\1.bucket = \3.bucket))', 'g');
    IF newdef OPERATOR(pg_catalog.<>) def THEN
      BEGIN
        EXECUTE pg_catalog.format('CREATE OR REPLACE VIEW %s AS %s', v.rel, newdef);
      EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'view % keeps its single-node joins: %', v.rel, SQLERRM;
      END;
    END IF;
  END LOOP;

  -- The parts of the alerts Citus cannot run across shards read through
  -- their distributed versions (sql/1.1--1.2/62_distributed_alerts.sql);
  -- the view keeps the functions, whose bodies change.
  FOR r IN SELECT p.oid, p.proname, p.pronargs FROM pg_catalog.pg_proc p
             WHERE p.pronamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace
               AND p.proname OPERATOR(pg_catalog.=) ANY ('{alert_pending_types,alert_watched_workflows,alert_unsettled_runs}')
             ORDER BY p.proname LOOP
    EXECUTE pg_catalog.format(
      'CREATE OR REPLACE FUNCTION idemgate.%I(%s) RETURNS %s LANGUAGE sql STABLE SECURITY DEFINER'
      ' SET search_path = pg_catalog, pg_temp AS %L',
      r.proname, pg_catalog.pg_get_function_arguments(r.oid), pg_catalog.pg_get_function_result(r.oid),
      pg_catalog.format('SELECT * FROM idemgate.%I(%s)', 'distributed_' OPERATOR(pg_catalog.||) r.proname,
                        (SELECT pg_catalog.string_agg('$' OPERATOR(pg_catalog.||) i, ', ')
                           FROM pg_catalog.generate_series(1, r.pronargs) i)));
  END LOOP;

  -- Least privilege as on one node (64_distributed_privileges.sql): the
  -- views of a bundle read as their owner, and each role already granted
  -- a bundle gets its rights on the shards and the workers.
  FOR r IN SELECT DISTINCT m.rel FROM idemgate.bundle_members m
             JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) m.rel
            WHERE c.relkind OPERATOR(pg_catalog.=) 'v'
            ORDER BY 1 LOOP
    PERFORM idemgate.distributed_wrap_view(r.rel);
  END LOOP;
  FOR r IN SELECT DISTINCT gb.role::pg_catalog.regrole AS role
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles ro ON ro.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
            ORDER BY 1 LOOP
    PERFORM idemgate.distributed_sync_grants(r.role);
  END LOOP;

END
$$;
COMMENT ON FUNCTION idemgate.distribute(integer) IS
'Citus: distribute every per-run table by bucket, co-located, and make configuration tables reference tables; run once on the coordinator (docs/citus.md)';
REVOKE ALL ON FUNCTION idemgate.distribute(integer) FROM PUBLIC;
