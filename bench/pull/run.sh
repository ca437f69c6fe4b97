#!/usr/bin/env bash
# bench/pull/run.sh — the pull API against a pgmq-shaped queue in plain SQL.
#
# Both sides process the same work, alternating, ROUNDS times, CLIENTS
# clients, -M prepared:
#   baseline (base.sql): a table q (bigserial id, visibility time, read count,
#     enqueue time, jsonb message; index on vt): read 10 with
#     FOR UPDATE SKIP LOCKED + visibility timeout (pgmq.read's statement),
#     then one DELETE per message (pgmq.delete);
#   pull (pull.sql): idemgate.claim_effects('pull', 10), then one
#     complete_effect per effect (lease check, provider id, event, run
#     completed with its effects result, event: all its bookkeeping).
# Each round first tops both queues up to the same number of due items
# (approved runs with one pending effect each, and queue messages with the
# same payload), then runs a fixed number of batches (TX per client).
# Figure: effects (messages) per second, medians, ratio.
# Run as root after `make install`.  ROUNDS=3 CLIENTS=8 TX=400 SYNC=off
set -euo pipefail
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-8}
TX=${TX:-400}
SYNC=${SYNC:-off}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/../lib.sh"
psql_() { bench_psql -A -t "$@"; }
bench_cluster pull 55434 "synchronous_commit = $SYNC"
psql_ -d bench >/dev/null <<'SQL'
CREATE EXTENSION idemgate;
SELECT idemgate.set_actions_enabled(true, 'bench', 'pull');
CREATE TABLE q (msg_id bigserial PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0,
                enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL DEFAULT now(),
                message jsonb);
CREATE INDEX q_vt_idx ON q (vt);
CREATE SEQUENCE fill_seq;
-- top_up(n): n more approved runs with one pending effect each, and n messages.
CREATE FUNCTION top_up(n integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE base bigint := nextval('fill_seq') * 10000000;
BEGIN
  INSERT INTO idemgate.runs (idempotency_key, state, payload_hash, payload, version)
  SELECT 'pull-' || (base + g), 'approved', idemgate.hash_payload(jsonb_build_object('i', base + g)),
         jsonb_build_object('i', base + g), 1
  FROM generate_series(1, n) g;
  INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload)
  SELECT gen_random_uuid(), 'pull-' || (base + g), 'pull', 'customer-' || g,
         jsonb_build_object('i', g, 'subject', 'Order shipped')
  FROM generate_series(1, n) g;
  INSERT INTO q (message) SELECT jsonb_build_object('i', g, 'subject', 'Order shipped')
  FROM generate_series(1, n) g;
END $$;
SQL
bench_copy "$here"/base.sql "$here"/pull.sql
per_round=$((CLIENTS * TX * 10))

run() {	# run SCRIPT → effects/s
  as_pg "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared -c "$CLIENTS" -j 2 -t "$TX" \
      -f "$work/$1" bench 2>/dev/null | awk '/^tps = / { printf "%.0f\n", $3 * 10 }'
}

psql_ -d bench -c "SELECT top_up($per_round)" -c "VACUUM ANALYZE" >/dev/null
run base.sql >/dev/null; run pull.sql >/dev/null	# warm-up
bench_before_round() {
  psql_ -d bench -c "SELECT top_up($per_round)" -c "VACUUM ANALYZE q" -c "VACUUM ANALYZE idemgate.outbox" >/dev/null
}
bench_rounds "  round %s: pgmq-shaped %s msgs/s, pull API %s effects/s" "run base.sql" "run pull.sql"
echo "sync=$SYNC batch 10: baseline ${med_a}/s pull ${med_b}/s ratio=$ratio (goal >= 0.8)"
left=$(psql_ -d bench -c "SELECT count(*) FROM idemgate.outbox WHERE state <> 'completed'")
echo "effects not completed at the end: $left (runs completed: $(psql_ -d bench -c "SELECT count(*) FROM idemgate.runs WHERE state = 'completed'"))"
