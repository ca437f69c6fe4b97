#!/usr/bin/env bash
# bench/storage/run.sh — bytes per completed run, and the cost of purging.
#
# 1. N runs (default 50,000) go through the real API, each with one effect:
#    claim (with a workflow and a model in its result path) → enqueue_effect
#    → claim_effects → complete_effect. Then every idemgate table and index
#    is measured (pg_total_relation_size, heap + indexes + TOAST), before
#    and after VACUUM, minus the sizes of the empty schema: bytes per run.
# 2. purge: the runs are backdated one day and idemgate.purge('12 hours')
#    removes them; time taken and dead tuples left (n_dead_tup) are shown.
# Run as root after `make install`.  N=50000
set -euo pipefail
N=${N:-50000}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/../lib.sh"
psql_() { bench_psql -A -t "$@"; }
bench_cluster storage 55436 "synchronous_commit = off" "autovacuum = off"
psql_ -d bench <<'SQL'
CREATE EXTENSION idemgate;
SELECT idemgate.set_actions_enabled(true, 'bench', 'storage');
CREATE FUNCTION sizes() RETURNS TABLE (rel text, bytes bigint) LANGUAGE sql AS $$
  SELECT c.relname::text, pg_total_relation_size(c.oid)
  FROM pg_class c WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'p')
$$;
CREATE TABLE empty_sizes AS SELECT * FROM sizes();
SQL
start=$(date +%s.%N)
for ((i = 0; i < N; i += 5000)); do
psql_ -d bench >/dev/null <<SQL
DO \$\$
DECLARE c record;
BEGIN
  FOR i IN $i + 1 .. least($i + 5000, $N) LOOP
    SELECT * INTO c FROM idemgate.claim('order-2026-' || i,
      jsonb_build_object('order', i, 'customer', 'ACME', 'amount', 129.5), workflow => 'shipping');
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', 'mail', 'target', 'customer-' || i,
        'payload', jsonb_build_object('subject', 'Order shipped', 'order', i)));
  END LOOP;
END \$\$;
SELECT count(*) FROM idemgate.claim_effects('mail', 1000) c,
  LATERAL idemgate.complete_effect(c.effect_id, c.lease_owner, 'msg-' || c.effect_id, 200) x;
SQL
  while [ "$(psql_ -d bench -c "SELECT count(*) FROM idemgate.claim_effects('mail', 1000) c, LATERAL idemgate.complete_effect(c.effect_id, c.lease_owner, 'msg-' || c.effect_id, 200) x")" != 0 ]; do :; done
done
echo "made $N completed runs in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
report() {
  psql_ -d bench -F ' ' <<SQL
SELECT rel, ((s.bytes - COALESCE(e.bytes, 0)) / $N.0)::numeric(10,1) AS bytes_per_run
FROM sizes() s LEFT JOIN empty_sizes e USING (rel) WHERE s.bytes > COALESCE(e.bytes, 0) ORDER BY 2 DESC;
SELECT 'total bytes per completed run (' || '$1' || '): ' ||
       ((SELECT sum(s.bytes - COALESCE(e.bytes, 0)) FROM sizes() s LEFT JOIN empty_sizes e USING (rel)) / $N.0)::numeric(10,1)
       || ' (goal <= 800)';
SQL
}
psql_ -d bench -c "SELECT 'runs completed: ' || count(*) FROM idemgate.runs WHERE state = 'completed'" \
  -c "SELECT 'events per run: ' || round(count(*)::numeric / $N, 2) || ' (' || string_agg(DISTINCT kind, ', ') || ')' FROM idemgate.events"
report "as written"
psql_ -d bench -c "VACUUM FULL" >/dev/null
report "after VACUUM FULL (live rows only)"
psql_ -d bench -c "VACUUM ANALYZE" >/dev/null
# 2. purge a day's worth.
psql_ -d bench >/dev/null <<'SQL'
UPDATE idemgate.runs SET updated_at = updated_at - interval '1 day', created_at = created_at - interval '1 day';
UPDATE idemgate.outbox SET updated_at = updated_at - interval '1 day', created_at = created_at - interval '1 day';
UPDATE idemgate.events SET at = at - interval '1 day';
VACUUM FULL;
ANALYZE;
SQL
t0=$(date +%s.%N)
purged=$(psql_ -d bench -c "SELECT idemgate.purge('12 hours')")
t1=$(date +%s.%N)
psql_ -d bench -c "SELECT pg_stat_force_next_flush()" >/dev/null 2>&1 || true
sleep 1
echo "purge of $purged runs (a day): $(python3 -c "print(round($t1 - $t0, 2))") s"
psql_ -d bench -F ' ' -c "SELECT 'dead tuples left: ' || string_agg(relname || ' ' || n_dead_tup, ', ' ORDER BY relname) FROM pg_stat_user_tables WHERE schemaname = 'idemgate' AND n_dead_tup > 0"
