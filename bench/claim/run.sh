#!/usr/bin/env bash
# bench/claim/run.sh — claim throughput against the seed's bare statement.
#
# Starts a throwaway cluster, then alternates pgbench runs (8 clients,
# -M prepared) of idemgate.claim on new keys and of the bare
# INSERT ... ON CONFLICT ... RETURNING on an equivalent table, ROUNDS times
# each, and reports the median tps of each and their ratio. Both sides run
# in the same cluster, one after the other, so machine noise hits both.
# Run as root (it uses runuser for the server) after `make install`.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
CLIENTS=${CLIENTS:-8}
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
CONF
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w start >/dev/null
psql_() { as_pg "$bindir/psql" -h "$work" -p "$port" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_ -d postgres -c "CREATE DATABASE bench"
psql_ -d bench -c "CREATE EXTENSION idemgate" \
      -c "CREATE TABLE bench_runs (LIKE idemgate.runs INCLUDING ALL)"
[ -n "${SETUP_SQL:-}" ] && psql_ -d bench -c "$SETUP_SQL"
cp "$here"/claim.sql "$here"/baseline.sql "$work"/ && chown postgres "$work"/*.sql

run() {	# run SCRIPT → tps
  as_pg "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared -c "$CLIENTS" -j 2 \
      -T "$SECONDS_PER_RUN" -f "$work/$1" bench 2>/dev/null |
    awk '/^tps = / { printf "%.0f\n", $3 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

run baseline.sql >/dev/null	# warm-up
base=(); claim=()
for i in $(seq "$ROUNDS"); do
  base+=("$(run baseline.sql)")
  claim+=("$(run claim.sql)")
  echo "round $i: baseline ${base[-1]} tps, claim ${claim[-1]} tps"
done
b=$(printf '%s\n' "${base[@]}" | median)
c=$(printf '%s\n' "${claim[@]}" | median)
ratio=$(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.3f", c / b }')
echo "baseline_tps=$b claim_tps=$c ratio=$ratio (goal >= 0.9)"
