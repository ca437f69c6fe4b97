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
bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/idemgate-bench-claim.XXXXXX)
chown postgres "$work"
port=${PORT:-55432}
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

as_pg "$bindir/initdb" -D "$work/data" -A trust >/dev/null
cat >> "$work/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$work'
listen_addresses = ''
shared_preload_libraries = 'idemgate'
idemgate.dispatchers = 0
max_connections = 50
shared_buffers = 256MB
max_wal_size = 4GB
CONF
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w start >/dev/null
psql_() { as_pg "$bindir/psql" -h "$work" -p "$port" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_ -d postgres -c "CREATE DATABASE bench"
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
cp "$here"/*.sql "$work"/ && chown postgres "$work"/*.sql

run() {	# run SCRIPT SYNC → tps
  as_pg env PGOPTIONS="-c synchronous_commit=$2" "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared \
      -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$work/$1" bench 2>/dev/null |
    awk '/^tps = / { printf "%.0f\n", $3 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

run baseline.sql on >/dev/null	# warm-up
for case in $CASES; do
  for sync in $SYNC; do
    if [ "$case" = new ]; then b_sql=baseline.sql; c_sql=claim.sql; goal=0.90
    else b_sql=baseline_dup.sql; c_sql=claim_dup.sql; goal=0.95; fi
    base=(); claim=()
    for i in $(seq "$ROUNDS"); do
      base+=("$(run $b_sql "$sync")")
      claim+=("$(run $c_sql "$sync")")
      echo "  $case sync=$sync round $i: baseline ${base[-1]} tps, claim ${claim[-1]} tps"
    done
    b=$(printf '%s\n' "${base[@]}" | median)
    c=$(printf '%s\n' "${claim[@]}" | median)
    ratio=$(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.3f", c / b }')
    echo "$case sync=$sync: baseline_tps=$b claim_tps=$c ratio=$ratio (goal >= $goal)"
  done
done
