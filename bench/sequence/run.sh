#!/usr/bin/env bash
# bench/sequence/run.sh — the reference sequence claim → request_approval →
# consume_approval (idemgate.sql) against the same logic as plain SQL
# statements sent by the client (plain.sql) on tables of the same shape,
# alternating ROUNDS times, CLIENTS clients, -M prepared, synchronous_commit
# off then on (SYNC="off on"). Figure: sequences per second, medians, ratio.
# Run as root after `make install`.  ROUNDS=3 SECONDS_PER_RUN=10 CLIENTS=8
set -euo pipefail
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-8}
SYNC=${SYNC:-off on}
here=$(cd "$(dirname "$0")" && pwd)
bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/idemgate-bench-seq.XXXXXX)
chown postgres "$work"
port=${PORT:-55435}
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
psql_ -d bench <<'SQL'
CREATE EXTENSION idemgate;
CREATE TABLE p_runs (LIKE idemgate.runs INCLUDING ALL);
CREATE TABLE p_approvals (LIKE idemgate.approvals INCLUDING ALL);
ALTER TABLE p_approvals ADD FOREIGN KEY (idempotency_key) REFERENCES p_runs ON DELETE CASCADE;
CREATE TABLE p_outbox (LIKE idemgate.outbox INCLUDING ALL);
ALTER TABLE p_outbox ADD FOREIGN KEY (idempotency_key) REFERENCES p_runs ON DELETE CASCADE;
CREATE TABLE p_events (LIKE idemgate.events INCLUDING ALL);
SQL
cp "$here"/idemgate.sql "$here"/plain.sql "$work"/ && chown postgres "$work"/*.sql

run() {	# run SCRIPT SYNC → sequences/s
  as_pg env PGOPTIONS="-c synchronous_commit=$2" "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared \
      -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$work/$1" bench 2>"$work/err" |
    awk '/^tps = / { printf "%.0f\n", $3 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

run plain.sql off >/dev/null	# warm-up
for sync in $SYNC; do
  base=(); ours=()
  for i in $(seq "$ROUNDS"); do
    base+=("$(run plain.sql "$sync")")
    ours+=("$(run idemgate.sql "$sync")")
    echo "  sync=$sync round $i: plain SQL ${base[-1]}/s, idemgate ${ours[-1]}/s"
  done
  b=$(printf '%s\n' "${base[@]}" | median)
  o=$(printf '%s\n' "${ours[@]}" | median)
  echo "sync=$sync: plain_sql=$b idemgate=$o ratio=$(awk -v o="$o" -v b="$b" 'BEGIN { printf "%.3f", o / b }') (goal >= 1.5 with sync off)"
done
psql_ -d bench -At -c "SELECT 'check: plain approved ' || (SELECT count(*) FROM p_runs WHERE state = 'approved') || ', idemgate approved ' || (SELECT count(*) FROM idemgate.runs WHERE state = 'approved')"
