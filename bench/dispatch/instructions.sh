#!/usr/bin/env bash
#
# bench/dispatch/instructions.sh
#	  The dispatcher's cost per delivered effect in instructions (callgrind),
#	  not seconds: the same count for the same build and inputs whatever
#	  else the machine is doing, so two builds can be compared on a busy
#	  machine. A throw-away cluster runs under valgrind's callgrind, which
#	  collects only inside the dispatcher (IdemgateDispatcherMain); N
#	  effects (one run and one effect each, chunked as in bench/dispatch/
#	  run.sh) are enqueued with the kill switch off; the counters are
#	  zeroed, the switch turned on, and they are dumped when the last
#	  effect is delivered to the loopback C sink. Prints the instructions
#	  per effect and, with PROFILE=1, the functions that cost most
#	  (inclusive), for the profile in bench/README.md.
#
#	  HISTORY=0 adds that many completed runs with one completed effect
#	  each first (VACUUM ANALYZE), as run.sh's 1M phase does.
#
# Runs as root with the extension installed (make install, PG_CONFIG).
#
#	  N=2000 HISTORY=0 BATCH=100 INFLIGHT=64 PROFILE=0
#
set -eu

cd "$(dirname "$0")/../.."
N=${N:-2000}
HISTORY=${HISTORY:-0}
BATCH=${BATCH:-100}
INFLIGHT=${INFLIGHT:-64}
PROFILE=${PROFILE:-0}
PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
PORT=${PORT:-55437}

TMP=$(mktemp -d /tmp/idemgate-instr.XXXXXX)
chmod 755 "$TMP"
RUNAS=
if [ "$(id -u)" = 0 ]; then
	chown postgres "$TMP"
	RUNAS="runuser -u postgres --"
fi
SINK_PID=
VG_PID=
cleanup() {
	$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -m fast stop >/dev/null 2>&1 || true
	[ -n "$VG_PID" ] && wait "$VG_PID" 2>/dev/null || true
	if [ -n "$SINK_PID" ] && kill -0 "$SINK_PID" 2>/dev/null; then
		kill -TERM "$SINK_PID"
		wait "$SINK_PID" 2>/dev/null || true
	fi
	[ -n "${KEEP:-}" ] && { mkdir -p "$KEEP"; cp "$TMP"/cg.* "$KEEP"/ 2>/dev/null || true; }
	rm -rf "$TMP"
}
trap cleanup EXIT

cc -O2 -o "$TMP/sink" test/sink/sink.c
"$TMP/sink" --port 0 --port-file "$TMP/sink.port" --log /dev/null --max-seconds 3600 --quiet &
SINK_PID=$!
for _ in $(seq 100); do [ -s "$TMP/sink.port" ] && break; sleep 0.1; done
SINK_URL="http://127.0.0.1:$(cat "$TMP/sink.port")"

$RUNAS "$PGBIN/initdb" -D "$TMP/data" -A trust >/dev/null
cat >>"$TMP/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$TMP'
shared_preload_libraries = 'idemgate'
idemgate.database = 'bench'
idemgate.dispatchers = 1
idemgate.batch_size = $BATCH
idemgate.max_in_flight = $INFLIGHT
idemgate.poll_interval = '1s'
shared_buffers = '512MB'
max_wal_size = '4GB'
autovacuum = off
EOF
# Only the dispatcher's call tree is collected; every process forked by the
# postmaster writes its own file, cg.<pid>.
$RUNAS bash -c "cd '$TMP' && exec valgrind --tool=callgrind --quiet --collect-atstart=no \
	--toggle-collect=IdemgateDispatcherMain --callgrind-out-file='$TMP/cg.%p' \
	'$PGBIN/postgres' -D '$TMP/data' >'$TMP/server.log' 2>&1" &
VG_PID=$!
PSQL="$PGBIN/psql -X -q -A -t -v ON_ERROR_STOP=1 -h $TMP -p $PORT -U postgres"
for _ in $(seq 600); do
	$RUNAS "$PGBIN/pg_isready" -q -h "$TMP" -p "$PORT" -d postgres && break
	sleep 1
done
$PSQL -d postgres -c 'CREATE DATABASE bench'
$PSQL -d bench <<'EOF'
CREATE EXTENSION idemgate;
CREATE FUNCTION enqueue(prefix text, n int, typ text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  FOR i IN 1..n LOOP
    SELECT * INTO c FROM idemgate.claim(prefix || '-' || i, jsonb_build_object('i', i));
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', typ, 'target', 'customer-' || i,
        'payload', jsonb_build_object('i', i, 'subject', 'Order shipped')));
  END LOOP;
END $$;
CREATE FUNCTION delivered() RETURNS bigint LANGUAGE sql AS
  $$ SELECT COALESCE(sum(completed), 0)::bigint FROM idemgate.dispatcher_status() $$;
EOF
for _ in $(seq 600); do
	[ "$($PSQL -d bench -c 'SELECT count(*) FROM idemgate.dispatcher_status()')" -ge 1 ] && break
	sleep 0.5
done
DPID=$($PSQL -d bench -c 'SELECT pid FROM idemgate.dispatcher_status() ORDER BY slot LIMIT 1')

if [ "$HISTORY" -gt 0 ]; then
	$PSQL -d bench >/dev/null <<EOF
INSERT INTO idemgate.runs (idempotency_key, workflow, state, payload_hash, payload, version, result, created_at, updated_at)
SELECT 'done-' || g, NULL, 'completed', idemgate.hash_payload(jsonb_build_object('i', g)),
       jsonb_build_object('i', g), 2, NULL, now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, $HISTORY) g;
INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload, state, attempts,
                             provider_id, last_status, created_at, updated_at, next_attempt_at)
SELECT gen_random_uuid(), 'done-' || g, 'old', 'customer-' || g,
       jsonb_build_object('i', g, 'subject', 'Order shipped'), 'completed', 1, 'p-' || g, 200,
       now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, $HISTORY) g;
VACUUM ANALYZE idemgate.runs;
VACUUM ANALYZE idemgate.outbox;
EOF
fi

$PSQL -d bench -c "SELECT idemgate.register_endpoint('bench', '$SINK_URL/ok', '10 seconds')" >/dev/null
$PSQL -d bench -c "SELECT idemgate.set_actions_enabled(false, 'bench', 'build backlog')" >/dev/null
for ((i = 0; i < N; i += 5000)); do
	$PSQL -d bench -c "SELECT enqueue('bench-$i', least(5000, $N - $i), 'bench')" >/dev/null
done
$PSQL -d bench -c 'CHECKPOINT' >/dev/null
before=$($PSQL -d bench -c 'SELECT delivered()')
# Everything the dispatcher did since it started is counted (vgdb cannot
# reach a forked child to zero the counters): its idle rounds while the
# backlog is built cost well under 1% of the deliveries (IDLE_CHECK=1
# measures them: the same run with the switch left off).
if [ -z "${IDLE_CHECK:-}" ]; then
	$PSQL -d bench -c "SELECT idemgate.set_actions_enabled(true, 'bench', 'go')" >/dev/null
	while [ $(($($PSQL -d bench -c 'SELECT delivered()') - before)) -lt "$N" ]; do sleep 0.5; done
fi
$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -m fast stop >/dev/null
wait "$VG_PID" 2>/dev/null || true
VG_PID=
dump="$TMP/cg.$DPID"
[ -s "$dump" ] || { echo "no callgrind output of the dispatcher ($DPID)"; ls "$TMP"; exit 1; }
total=$(callgrind_annotate "$dump" 2>/dev/null | sed -n "s/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p" | tr -d ,)
echo "dispatcher: $N effects, history $HISTORY rows: $total instructions, $((total / N)) per effect"
if [ "$PROFILE" = 1 ]; then
	callgrind_annotate --inclusive=yes --threshold=99 "$dump" 2>/dev/null | sed -n '1,60p' |
		grep -E '^ *[0-9,]+ ' | head -45
fi
