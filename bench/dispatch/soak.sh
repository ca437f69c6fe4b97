#!/usr/bin/env bash
#
# bench/dispatch/soak.sh
#	  Memory and throughput of one dispatcher over TOTAL deliveries (default
#	  1,000,000) to the loopback sink: pgbench producers (claim +
#	  enqueue_effect, PRODUCERS clients) keep a backlog while the dispatcher
#	  delivers; every INTERVAL seconds the effects delivered per second and
#	  the dispatcher's memory (VmRSS; RssAnon = its own memory, RssShmem =
#	  the shared buffers it touched) are printed, then the first and last
#	  tenth are compared. Runs as root after make install; stops by itself.
#	  TOTAL=1000000 PRODUCERS=2 INTERVAL=10 MAX_SECS=1500
#
set -eu
cd "$(dirname "$0")/../.."
TOTAL=${TOTAL:-1000000}
PRODUCERS=${PRODUCERS:-2}
INTERVAL=${INTERVAL:-10}
MAX_SECS=${MAX_SECS:-1500}
PGBIN=${PGBIN:-$(pg_config --bindir)}
PORT=${PORT:-55437}
TMP=$(mktemp -d /tmp/idemgate-soak.XXXXXX)
chmod 755 "$TMP"
chown postgres "$TMP"
RUNAS="runuser -u postgres --"
SINK_PID=
PGB_PID=
cleanup() {
	if [ -n "$PGB_PID" ]; then kill "$PGB_PID" 2>/dev/null || true; fi
	$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -m immediate stop >/dev/null 2>&1 || true
	if [ -n "$SINK_PID" ]; then kill -TERM "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT

cc -O2 -o "$TMP/sink" test/sink/sink.c
"$TMP/sink" --port 0 --port-file "$TMP/sink.port" --log /dev/null --max-seconds $((MAX_SECS + 60)) --quiet &
SINK_PID=$!
for _ in $(seq 100); do [ -s "$TMP/sink.port" ] && break; sleep 0.1; done
SINK_URL="http://127.0.0.1:$(cat "$TMP/sink.port")"

$RUNAS "$PGBIN/initdb" -D "$TMP/data" -A trust >/dev/null
{
	echo "port = $PORT"
	echo "listen_addresses = ''"
	echo "unix_socket_directories = '$TMP'"
	echo "shared_preload_libraries = 'idemgate'"
	echo "idemgate.database = 'bench'"
	echo "idemgate.dispatchers = 1"
	echo "max_worker_processes = 16"
	echo "shared_buffers = '128MB'"
	echo "max_wal_size = '4GB'"
	echo "synchronous_commit = off"
} >>"$TMP/data/postgresql.conf"
$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w start >/dev/null
PSQL="$PGBIN/psql -X -q -A -t -v ON_ERROR_STOP=1 -h $TMP -p $PORT -U postgres"
$PSQL -d postgres -c 'CREATE DATABASE bench'
$PSQL -d bench -c 'CREATE EXTENSION idemgate' \
	-c "SELECT idemgate.register_endpoint('soak', '$SINK_URL/ok', '10 seconds')" >/dev/null
for _ in $(seq 100); do
	[ "$($PSQL -d bench -c 'SELECT count(*) FROM idemgate.dispatcher_status()')" -ge 1 ] && break
	sleep 0.1
done
DPID=$($PSQL -d bench -c 'SELECT pid FROM idemgate.dispatcher_status() LIMIT 1')

echo "SELECT e.version FROM idemgate.claim('soak-' || gen_random_uuid(), '{\"order\": 1}') c, LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version, '{\"type\": \"soak\", \"target\": \"customer\", \"payload\": {\"subject\": \"Order shipped\"}}') e;" >"$TMP/produce.sql"
chmod 644 "$TMP/produce.sql"
$RUNAS "$PGBIN/pgbench" -n -h "$TMP" -p "$PORT" -U postgres -c "$PRODUCERS" -j 1 -T "$MAX_SECS" \
	-f "$TMP/produce.sql" bench >/dev/null 2>&1 &
PGB_PID=$!

mem() { awk '/^VmRSS/ { r = $2 } /^RssAnon/ { a = $2 } /^RssShmem/ { s = $2 } END { printf "VmRSS %d kB (RssAnon %d, RssShmem %d)", r, a, s }' "/proc/$DPID/status"; }
start=$(date +%s)
last=0
rates=()
while :; do
	sleep "$INTERVAL"
	d=$($PSQL -d bench -c 'SELECT completed FROM idemgate.dispatcher_status() LIMIT 1')
	rate=$(((d - last) / INTERVAL))
	last=$d
	rates+=("$rate")
	echo "t=$(($(date +%s) - start))s delivered=$d rate=${rate}/s backlog=$($PSQL -d bench -c "SELECT count(*) FROM idemgate.outbox WHERE state = 'pending'") $(mem)"
	[ "$d" -ge "$TOTAL" ] && break
	if [ $(($(date +%s) - start)) -ge "$MAX_SECS" ]; then echo "stopped at MAX_SECS"; break; fi
done
python3 -c '
import sys
r = [int(x) for x in sys.argv[1:]]
k = max(1, len(r) // 10)
first, last = sum(r[:k]) / k, sum(r[-k:]) / k
print("first tenth %.0f/s, last tenth %.0f/s, ratio %.2f (goal: no fall)" % (first, last, last / first if first else 0))
' "${rates[@]}"
echo "dispatcher at end: $(mem) (goal: RSS < 64 MB)"
