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
# shellcheck source=bench/lib.sh
. "$here/../lib.sh"
bench_cluster seq 55435
psql_ -d bench <<'SQL'
CREATE EXTENSION idemgate;
CREATE TABLE p_runs (LIKE idemgate.runs INCLUDING ALL);
CREATE TABLE p_approvals (LIKE idemgate.approvals INCLUDING ALL);
ALTER TABLE p_approvals ADD FOREIGN KEY (idempotency_key) REFERENCES p_runs ON DELETE CASCADE;
CREATE TABLE p_outbox (LIKE idemgate.outbox INCLUDING ALL);
ALTER TABLE p_outbox ADD FOREIGN KEY (idempotency_key) REFERENCES p_runs ON DELETE CASCADE;
CREATE TABLE p_events (LIKE idemgate.events INCLUDING ALL);
SQL
bench_copy "$here"/idemgate.sql "$here"/plain.sql

bench_tps plain.sql off >/dev/null	# warm-up
for sync in $SYNC; do
  bench_rounds "  sync=$sync round %s: plain SQL %s/s, idemgate %s/s" \
    "bench_tps plain.sql $sync" "bench_tps idemgate.sql $sync"
  echo "sync=$sync: plain_sql=$med_a idemgate=$med_b ratio=$ratio (goal >= 1.5 with sync off)"
done
psql_ -d bench -At -c "SELECT 'check: plain approved ' || (SELECT count(*) FROM p_runs WHERE state = 'approved') || ', idemgate approved ' || (SELECT count(*) FROM idemgate.runs WHERE state = 'approved')"
