#!/usr/bin/env bash
#
# bench/dispatch/run.sh
#	  Dispatcher benchmark against the loopback sink (test/sink/sink.c):
#	  1. throughput: a backlog of N effects is built with the kill switch
#	     off, then switched on; effects delivered (completed) per second;
#	  2. latency: pgbench enqueues ~RATE effects/s for LAT_SECS seconds, one
#	     per transaction; each payload carries clock_timestamp() taken at
#	     insert time, and the sink logs the arrival time: p50/p99 of the
#	     difference (slightly pessimistic: the commit comes after the insert).
#	  The sink-alone ceiling comes from bench/dispatch/sink_alone.sh (set
#	  SINK_ALONE=1 to run it first and print the ratio).
#
# Runs as root or postgres with the extension installed (make install).
# A throw-away cluster in a temp directory; everything stops at the end.
#
#	  N=20000  RATE=100  LAT_SECS=10  DISPATCHERS=1  BATCH=100  INFLIGHT=64
#	  SINK_ALONE=0
#
set -eu

cd "$(dirname "$0")/../.."
N=${N:-20000}
RATE=${RATE:-100}
LAT_SECS=${LAT_SECS:-10}
DISPATCHERS=${DISPATCHERS:-1}
BATCH=${BATCH:-100}
INFLIGHT=${INFLIGHT:-64}
SINK_ALONE=${SINK_ALONE:-0}
PGBIN=${PGBIN:-$(pg_config --bindir)}
PORT=${PORT:-55432}

SINK_RPS=
if [ "$SINK_ALONE" = 1 ]; then
	SINK_RPS=$(bash bench/dispatch/sink_alone.sh | sed -n 's/^sink_alone_rps=//p' | tail -1)
	echo "sink alone: $SINK_RPS requests/s"
fi

TMP=$(mktemp -d /tmp/idemgate-bench.XXXXXX)
chmod 755 "$TMP"
RUNAS=
if [ "$(id -u)" = 0 ]; then
	chown postgres "$TMP"
	RUNAS="runuser -u postgres --"
fi
SINK_PID=
cleanup() {
	$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -m fast stop >/dev/null 2>&1 || true
	if [ -n "$SINK_PID" ] && kill -0 "$SINK_PID" 2>/dev/null; then
		kill -TERM "$SINK_PID"
		wait "$SINK_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

cc -O2 -o "$TMP/sink" test/sink/sink.c
"$TMP/sink" --port 0 --port-file "$TMP/sink.port" --log "$TMP/sink.jsonl" \
	--max-seconds 900 --quiet &
SINK_PID=$!
for _ in $(seq 100); do [ -s "$TMP/sink.port" ] && break; sleep 0.1; done
SINK_URL="http://127.0.0.1:$(cat "$TMP/sink.port")"

$RUNAS "$PGBIN/initdb" -D "$TMP/data" -A trust >/dev/null
cat >>"$TMP/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$TMP'
shared_preload_libraries = '${PRELOAD:-idemgate}'
idemgate.database = 'bench'
idemgate.dispatchers = $DISPATCHERS
idemgate.batch_size = $BATCH
idemgate.max_in_flight = $INFLIGHT
idemgate.poll_interval = '1s'
max_worker_processes = 16
shared_buffers = '256MB'
max_wal_size = '2GB'
EOF
$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w start >/dev/null
PSQL="$PGBIN/psql -X -q -A -t -h $TMP -p $PORT -U postgres"
$PSQL -d postgres -c 'CREATE DATABASE bench'
$PSQL -d bench <<EOF
CREATE EXTENSION idemgate;
SELECT idemgate.register_endpoint('bench', '$SINK_URL/ok', '10 seconds');
SELECT idemgate.register_endpoint('lat', '$SINK_URL/ok', '10 seconds');
CREATE FUNCTION enqueue(prefix text, n int, typ text) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE c record;
BEGIN
  FOR i IN 1..n LOOP
    SELECT * INTO c FROM idemgate.claim(prefix || '-' || i, jsonb_build_object('i', i));
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', typ, 'target', 'customer-' || i,
        'payload', jsonb_build_object('i', i, 'subject', 'Order shipped',
                                      'at', extract(epoch FROM clock_timestamp()))));
  END LOOP;
END \$\$;
EOF
# Wait for the dispatcher.
for _ in $(seq 100); do
	[ "$($PSQL -d bench -c 'SELECT count(*) FROM idemgate.dispatcher_status()')" -ge 1 ] && break
	sleep 0.1
done

# 1. Throughput.
$PSQL -d bench -c "SELECT idemgate.set_actions_enabled(false, 'bench', 'build backlog')" >/dev/null
CHUNK=5000
for ((i = 0; i < N; i += CHUNK)); do
	$PSQL -d bench -c "SELECT enqueue('tp$i', least($CHUNK, $N - $i), 'bench')" >/dev/null
done
$PSQL -d bench -c 'CHECKPOINT' >/dev/null
T0=$($PSQL -d bench -c "SELECT extract(epoch FROM clock_timestamp()); SELECT idemgate.set_actions_enabled(true, 'bench', 'go')" | head -1)
while [ "$($PSQL -d bench -c "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'bench' AND state <> 'completed'")" != 0 ]; do
	sleep 0.2
done
T1=$($PSQL -d bench -c "SELECT extract(epoch FROM max(updated_at)) FROM idemgate.outbox WHERE effect_type = 'bench'")
RPS=$(python3 -c "print(round($N / ($T1 - $T0)))")
echo "throughput: $N effects in $(python3 -c "print(round($T1 - $T0, 2))") s = $RPS effects/s (dispatchers=$DISPATCHERS batch=$BATCH max_in_flight=$INFLIGHT)"
if [ -n "$SINK_RPS" ]; then
	echo "ratio to the sink alone: $(python3 -c "print(round($RPS / $SINK_RPS, 3))")"
fi
DUP=$(curl -s "$SINK_URL/__stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keys_2xx_more_than_once"])')
echo "keys delivered more than once: $DUP"
if [ -n "${PGSS:-}" ]; then
	$PSQL -d bench -c "CREATE EXTENSION pg_stat_statements"
	$PSQL -d bench -F ' | ' -c "SELECT round(total_exec_time)::int AS ms, calls, round((total_exec_time / calls)::numeric, 3) AS ms_per_call, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25"
fi

# 2. Latency at ~RATE effects/s, one effect per transaction.
cat >"$TMP/lat.sql" <<'EOF'
SELECT e.version FROM idemgate.claim('lat-' || gen_random_uuid(), '{}') c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    jsonb_build_object('type', 'lat', 'target', 't',
      'payload', jsonb_build_object('at', extract(epoch FROM clock_timestamp())))) e;
EOF
$RUNAS "$PGBIN/pgbench" -n -h "$TMP" -p "$PORT" -U postgres -c 2 -j 1 -R "$RATE" -T "$LAT_SECS" \
	-f "$TMP/lat.sql" bench >"$TMP/pgbench.out" 2>&1
for _ in $(seq 100); do
	[ "$($PSQL -d bench -c "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'lat' AND state <> 'completed'")" = 0 ] && break
	sleep 0.1
done
sleep 0.1
python3 - "$TMP/sink.jsonl" <<'EOF'
import json, sys
lat = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    b = r.get("body")
    if isinstance(b, dict) and b.get("effect_type") == "lat":
        lat.append((r["t"] - float(b["payload"]["at"])) * 1000.0)
lat.sort()
def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))]
print("latency: %d effects, insert-to-delivery p50 %.2f ms, p99 %.2f ms, max %.2f ms"
      % (len(lat), pct(0.50), pct(0.99), lat[-1]))
EOF
