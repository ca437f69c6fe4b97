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
psql_ -d bench < "$here/setup.sql"
[ -n "${SETUP_SQL:-}" ] && psql_ -d bench -c "$SETUP_SQL"
bench_copy "$here"/baseline*.sql "$here"/claim*.sql

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
