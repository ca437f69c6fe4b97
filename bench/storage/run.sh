#!/usr/bin/env bash
# bench/storage/run.sh — bytes per completed run, and the cost of purging.
#
# 1. N runs (default 50,000) go through the real API, each with one effect:
#    claim (with a workflow and a model in its result path) → enqueue_effect
#    → claim_effects → complete_effect. Then every idemgate table and index
#    is measured (pg_total_relation_size, heap + indexes + TOAST), before
#    and after VACUUM, minus the sizes of the empty schema: bytes per run.
# 2. purge: the runs are backdated one day, N more are made today, and
#    idemgate.purge('12 hours') removes yesterday's; time taken, runs pages
#    it read (against the pages of each day) and dead tuples left.
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
# make_runs FIRST LAST: completed runs order-2026-(FIRST+1) .. LAST, each with
# one delivered effect, through the real API.
make_runs() {
  local i
for ((i = $1; i < $2; i += 5000)); do
psql_ -d bench >/dev/null <<SQL
DO \$\$
DECLARE c record;
BEGIN
  FOR i IN $i + 1 .. least($i + 5000, $2) LOOP
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
}
start=$(date +%s.%N)
make_runs 0 "$N"
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
# 2. purge a day's worth: the N runs above become yesterday's, N more are
# made today, and purge('12 hours') must delete yesterday's without reading
# today's (runs pages read by the purge, from pg_statio, against the pages
# of each day).
psql_ -d bench >/dev/null <<'SQL'
UPDATE idemgate.runs SET updated_at = updated_at - interval '1 day', created_at = created_at - interval '1 day';
UPDATE idemgate.outbox SET updated_at = updated_at - interval '1 day', created_at = created_at - interval '1 day';
UPDATE idemgate.events SET at = at - interval '1 day';
VACUUM FULL;
SQL
old_pages=$(psql_ -d bench -c "SELECT pg_relation_size('idemgate.runs') / 8192")
make_runs "$N" $((2 * N))
psql_ -d bench -c "VACUUM ANALYZE" >/dev/null
all_pages=$(psql_ -d bench -c "SELECT pg_relation_size('idemgate.runs') / 8192")
# The purge's scan for candidates, as its plan reads them: heap pages of runs.
scan=$(psql_ -d bench -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT r.idempotency_key FROM idemgate.runs r
  WHERE r.state IN ('completed', 'failed_terminal') AND r.updated_at < now() - interval '12 hours'
    AND r.created_at < now() - interval '12 hours'")
t0=$(date +%s.%N)
purged=$(psql_ -d bench -c "SELECT idemgate.purge('12 hours')")
t1=$(date +%s.%N)
echo "purge of $purged runs (yesterday's $N, today's $N kept): $(python3 -c "print(round($t1 - $t0, 2))") s"
echo "runs pages the candidate scan reads: $(echo "$scan" | sed -n 's/.*Heap Blocks: //p' | head -1) via $(echo "$scan" | grep -o 'Bitmap Index Scan on [a-z_]*\|Seq Scan on [a-z_]*' | head -1) (yesterday's runs: $old_pages pages, today's: $((all_pages - old_pages)))"
psql_ -d bench -F ' ' -c "SELECT 'dead tuples left: ' || string_agg(relname || ' ' || n_dead_tup, ', ' ORDER BY relname) FROM pg_stat_user_tables WHERE schemaname = 'idemgate' AND n_dead_tup > 0"
psql_ -d bench -c "SELECT 'runs left: ' || count(*) || ' (today''s)' FROM idemgate.runs"
# 3. What purge keeps of each purged run (src/ledger/tombstones.c): a tombstone of
# the key's and the payload's digests, its final state and two times. Its
# bytes per purged key on disk (heap + primary key, after VACUUM FULL), and
# a late duplicate of a purged key: duplicate, state purged.
psql_ -d bench -c "VACUUM FULL idemgate.tombstones" >/dev/null
psql_ -d bench -F ' ' <<SQL
SELECT 'tombstones: ' || count(*) || ' kept for ' || $purged || ' purged runs' FROM idemgate.tombstones;
SELECT 'tombstone bytes per purged key: ' ||
       (pg_total_relation_size('idemgate.tombstones') / GREATEST(count(*), 1)::numeric)::numeric(10,1) ||
       ' (heap ' || (pg_relation_size('idemgate.tombstones') / GREATEST(count(*), 1)::numeric)::numeric(10,1) ||
       ', primary key ' || (pg_relation_size('idemgate.tombstones_pkey') / GREATEST(count(*), 1)::numeric)::numeric(10,1) ||
       '; goal <= 100)'
  FROM idemgate.tombstones;
SELECT 'a late duplicate of a purged key: ' || outcome || '/' || state
  FROM idemgate.claim('order-2026-1', jsonb_build_object('order', 1, 'customer', 'ACME', 'amount', 129.5));
SQL
