#!/usr/bin/env bash
# bench/claim/run.sh — claim throughput against the seed's bare statement.
#
# Starts a throwaway cluster, then alternates pgbench runs (CLIENTS clients,
# -M prepared) of the baseline and of idemgate.claim, ROUNDS times each, for
# each case:
#   new     new keys: baseline.sql (the seed's INSERT ... ON CONFLICT ...
#           RETURNING on bench_runs, a PLAIN table: the columns of
#           idemgate.runs, primary key only, no CHECK, no other index)
#           against claim.sql;
#   dup     keys claimed before: baseline_dup.sql (the same statement, which
#           returns nothing, + a SELECT of the stored row) against
#           claim_dup.sql (outcome duplicate, counted as an event);
# each with synchronous_commit on and off (SYNC="on off"). Reports the
# median tps of each side and their ratio. Both sides run in the same
# cluster, one after the other, so machine noise hits both.
# Run as root (it uses runuser for the server) after `make install`.
#   ROUNDS=3 SECONDS_PER_RUN=10 CLIENTS=8 CASES="new dup" SYNC="on off"
set -euo pipefail
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-8}
CASES=${CASES:-new dup}
SYNC=${SYNC:-on off}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/../lib.sh"
bench_cluster claim 55432
psql_ -d bench -c "CREATE EXTENSION idemgate" \
      -c "CREATE TABLE bench_runs (LIKE idemgate.runs INCLUDING DEFAULTS, PRIMARY KEY (idempotency_key))"
# Keys for the duplicate case, on both sides, with a lease that outlives the run.
psql_ -d bench <<'SQL'
SELECT count(*) FROM generate_series(1, 100000) g,
  LATERAL idemgate.claim('dup-' || g,
    '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb, '1 hour') c;
INSERT INTO bench_runs (idempotency_key, state, payload_hash, payload, lease_owner, lease_expires_at, lease_started_at)
SELECT 'dup-' || g, 'processing',
       sha256(convert_to('{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb::text, 'UTF8')),
       '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}', gen_random_uuid(),
       now() + interval '1 hour', now()
FROM generate_series(1, 100000) g;
VACUUM ANALYZE;
SQL
[ -n "${SETUP_SQL:-}" ] && psql_ -d bench -c "$SETUP_SQL"
bench_copy "$here"/*.sql

bench_tps baseline.sql on >/dev/null	# warm-up
for case in $CASES; do
  for sync in $SYNC; do
    if [ "$case" = new ]; then b_sql=baseline.sql; c_sql=claim.sql; goal=0.90
    else b_sql=baseline_dup.sql; c_sql=claim_dup.sql; goal=0.95; fi
    bench_rounds "  $case sync=$sync round %s: baseline %s tps, claim %s tps" \
      "bench_tps $b_sql $sync" "bench_tps $c_sql $sync"
    echo "$case sync=$sync: baseline_tps=$med_a claim_tps=$med_b ratio=$ratio (goal >= $goal)"
  done
done
