#!/usr/bin/env bash
#
# bench/dispatch/run.sh
#	  Dispatcher benchmark against the loopback C sink (test/sink/sink.c),
#	  each figure printed beside its baseline, on a throw-away cluster:
#
#	  phase "empty"  outbox empty (TRUNCATE), then
#	  phase "1M"     COMPLETED_ROWS (default 1,000,000) completed runs with one
#	                 completed effect each loaded into runs/outbox (VACUUM ANALYZE)
#
#	  and in each phase, ROUNDS times:
#	  1. throughput, chunked backlog: N effects (one run and one effect each)
#	     enqueued by a plpgsql function in chunks of 5,000 (one transaction
#	     each) with the kill switch off; switched on; effects completed per
#	     second (switch-on to the last effect's updated_at);
#	  2. throughput, DO-loop backlog: the same N made by one DO block (one
#	     transaction: claim + enqueue_effect in a loop), switch off then on;
#	  3. latency: pgbench -R RATE enqueues ~RATE effects/s for LAT_SECS
#	     seconds, one per transaction; each payload carries clock_timestamp()
#	     taken at insert time; the sink logs the arrival: p50/p99 of arrival
#	     minus insert (pessimistic: the commit comes after the insert).
#	  Prints the medians, the 1M/empty ratios, and the dispatcher's RSS.
#
# Runs as root with the extension installed (make install); ~4 minutes with
# the defaults. Everything stops at the end.
#
#	  N=20000 RATE=100 LAT_SECS=10 ROUNDS=2 COMPLETED_ROWS=1000000
#	  DISPATCHERS=1 BATCH=100 INFLIGHT=64 SYNC=on PHASES="empty 1M"
#
set -eu

cd "$(dirname "$0")/../.."
N=${N:-20000}
RATE=${RATE:-100}
LAT_SECS=${LAT_SECS:-10}
ROUNDS=${ROUNDS:-2}
COMPLETED_ROWS=${COMPLETED_ROWS:-1000000}
DISPATCHERS=${DISPATCHERS:-1}
BATCH=${BATCH:-100}
INFLIGHT=${INFLIGHT:-64}
SYNC=${SYNC:-on}
PHASES=${PHASES:-empty 1M}
PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
PORT=${PORT:-55433}

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
	--max-seconds 1800 --quiet &
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
idemgate.dispatchers = $DISPATCHERS
idemgate.batch_size = $BATCH
idemgate.max_in_flight = $INFLIGHT
idemgate.poll_interval = '1s'
max_worker_processes = 16
shared_buffers = '512MB'
max_wal_size = '4GB'
synchronous_commit = $SYNC
EOF
$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w start >/dev/null
PSQL="$PGBIN/psql -X -q -A -t -v ON_ERROR_STOP=1 -h $TMP -p $PORT -U postgres"
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
for _ in $(seq 100); do
	[ "$($PSQL -d bench -c 'SELECT count(*) FROM idemgate.dispatcher_status()')" -ge 1 ] && break
	sleep 0.1
done
DPID=$($PSQL -d bench -c 'SELECT pid FROM idemgate.dispatcher_status() ORDER BY slot LIMIT 1')
# Resident memory of the dispatcher: VmRSS counts the shared buffers it
# touched (up to shared_buffers); RssAnon is its own memory.
rss() { awk '/^VmRSS/ { r = $2 } /^RssAnon/ { a = $2 } /^RssShmem/ { s = $2 } END { printf "VmRSS %d kB = RssAnon %d + RssFile + RssShmem %d", r, a, s }' "/proc/$DPID/status"; }
echo "dispatcher pid $DPID, at start: $(rss)"
# CPU time of the dispatcher (user + system), in clock ticks.
TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/stat"; }

# throughput MODE TYPE → effects/s. MODE chunk | do; TYPE a fresh effect type.
throughput() {
	local typ="$2" before t0 t1
	$PSQL -d bench -c "SELECT idemgate.register_endpoint('$typ', '$SINK_URL/ok', '10 seconds')" >/dev/null
	$PSQL -d bench -c "SELECT idemgate.set_actions_enabled(false, 'bench', 'build backlog')" >/dev/null
	if [ "$1" = chunk ]; then
		for ((i = 0; i < N; i += 5000)); do
			$PSQL -d bench -c "SELECT enqueue('$typ-$i', least(5000, $N - $i), '$typ')" >/dev/null
		done
	else
		$PSQL -d bench >/dev/null <<EOF
DO \$\$
DECLARE c record;
BEGIN
  FOR i IN 1..$N LOOP
    SELECT * INTO c FROM idemgate.claim('$typ-' || i, jsonb_build_object('i', i));
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', '$typ', 'target', 'customer-' || i,
        'payload', jsonb_build_object('i', i, 'subject', 'Order shipped')));
  END LOOP;
END \$\$;
EOF
	fi
	$PSQL -d bench -c 'CHECKPOINT' >/dev/null
	before=$($PSQL -d bench -c 'SELECT delivered()')
	local perf_pid=
	if [ -n "${PERF_DIR:-}" ]; then	# profile the dispatcher during the run
		perf record -g -p "$DPID" -o "$PERF_DIR/$typ.data" >/dev/null 2>&1 &
		perf_pid=$!
	fi
	local cpu0 cpu1
	cpu0=$(cpu_ticks)
	t0=$($PSQL -d bench -c "SELECT extract(epoch FROM clock_timestamp()); SELECT idemgate.set_actions_enabled(true, 'bench', 'go')" | head -1)
	while [ $(($($PSQL -d bench -c 'SELECT delivered()') - before)) -lt "$N" ]; do sleep 0.1; done
	cpu1=$(cpu_ticks)
	if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
	t1=$($PSQL -d bench -c "SELECT extract(epoch FROM max(updated_at)) FROM idemgate.outbox WHERE effect_type = '$typ' AND state = 'completed'")
	python3 -c "print(round($N / ($t1 - $t0)), round(($cpu1 - $cpu0) * 1e6 / $TICKS / $N, 1))"
}

# latency TYPE → "p50 p99 count" (ms).
latency() {
	local typ="$1"
	$PSQL -d bench -c "SELECT idemgate.register_endpoint('$typ', '$SINK_URL/ok', '10 seconds')" >/dev/null
	cat >"$TMP/lat.sql" <<EOF
SELECT e.version FROM idemgate.claim('$typ-' || gen_random_uuid(), '{}') c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    jsonb_build_object('type', '$typ', 'target', 't',
      'payload', jsonb_build_object('at', extract(epoch FROM clock_timestamp())))) e;
EOF
	chmod 644 "$TMP/lat.sql"
	local before
	before=$($PSQL -d bench -c 'SELECT delivered()')
	$RUNAS "$PGBIN/pgbench" -n -h "$TMP" -p "$PORT" -U postgres -c 2 -j 1 -R "$RATE" -T "$LAT_SECS" \
		-f "$TMP/lat.sql" bench >"$TMP/pgbench.out" 2>&1
	local sent
	sent=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$TMP/pgbench.out")
	for _ in $(seq 100); do
		[ $(($($PSQL -d bench -c 'SELECT delivered()') - before)) -ge "${sent:-0}" ] && break
		sleep 0.1
	done
	sleep 0.3
	python3 - "$TMP/sink.jsonl" "$typ" <<'EOF'
import json, sys
lat = []
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    b = r.get("body")
    if isinstance(b, dict) and b.get("effect_type") == sys.argv[2]:
        lat.append((r["t"] - float(b["payload"]["at"])) * 1000.0)
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print("%.2f %.2f %d" % (pct(0.50), pct(0.99), len(lat)))
EOF
}

# The median; of an even count the mean of the two middle values.
median() { sort -n | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? a[m] : (a[m] + a[m + 1]) / 2 }'; }
# Autovacuum's passes over runs and outbox so far (a round it overlapped
# may be slower for it: the statistics and plans it changes, the pages it reads).
autovac() { $PSQL -d bench -c "SELECT string_agg(relname || ' vacuum ' || autovacuum_count || ' analyze ' || autoanalyze_count, ', ' ORDER BY relname) FROM pg_stat_user_tables WHERE schemaname = 'idemgate' AND relname IN ('runs', 'outbox')"; }
declare -A TP_CHUNK TP_DO CPU_CHUNK CPU_DO P50 P99
for phase in $PHASES; do
	$PSQL -d bench -c "TRUNCATE idemgate.events, idemgate.outbox, idemgate.approvals, idemgate.runs" >/dev/null
	if [ "$phase" = 1M ]; then
		echo "loading $COMPLETED_ROWS completed runs with one completed effect each..."
		$PSQL -d bench >/dev/null <<EOF
INSERT INTO idemgate.runs (idempotency_key, workflow, state, payload_hash, payload, version, result, created_at, updated_at)
SELECT 'done-' || g, NULL, 'completed', idemgate.hash_payload(jsonb_build_object('i', g)),
       jsonb_build_object('i', g), 2, NULL, now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, $COMPLETED_ROWS) g;
INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload, state, attempts,
                             provider_id, last_status, created_at, updated_at, next_attempt_at)
SELECT gen_random_uuid(), 'done-' || g, 'old', 'customer-' || g,
       jsonb_build_object('i', g, 'subject', 'Order shipped'), 'completed', 1, 'p-' || g, 200,
       now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, $COMPLETED_ROWS) g;
VACUUM ANALYZE idemgate.runs;
VACUUM ANALYZE idemgate.outbox;
EOF
	fi
	c=(); d=(); cc=(); dc=(); l50=(); l99=()
	for r in $(seq "$ROUNDS"); do
		read -r x xc < <(throughput chunk "chunk_${phase}_$r")
		read -r y yc < <(throughput do "do_${phase}_$r")
		c+=("$x"); d+=("$y"); cc+=("$xc"); dc+=("$yc")
		read -r a b cnt < <(latency "lat_${phase}_$r")
		l50+=("$a"); l99+=("$b")
		echo "  $phase round $r: chunked $x/s ($xc µs dispatcher CPU/effect), DO-loop $y/s ($yc µs CPU/effect), latency p50 $a ms p99 $b ms ($cnt effects), $(rss); autovacuum: $(autovac)"
	done
	TP_CHUNK[$phase]=$(printf '%s\n' "${c[@]}" | median)
	TP_DO[$phase]=$(printf '%s\n' "${d[@]}" | median)
	P50[$phase]=$(printf '%s\n' "${l50[@]}" | median)
	P99[$phase]=$(printf '%s\n' "${l99[@]}" | median)
	CPU_CHUNK[$phase]=$(printf '%s\n' "${cc[@]}" | median)
	CPU_DO[$phase]=$(printf '%s\n' "${dc[@]}" | median)
	echo "$phase: throughput chunked ${TP_CHUNK[$phase]}/s, DO-loop ${TP_DO[$phase]}/s (goal >= 10000); dispatcher CPU per effect ${CPU_CHUNK[$phase]} / ${CPU_DO[$phase]} µs = one core's capacity $(python3 -c "print(round(1e6 / ${CPU_CHUNK[$phase]}), '/', round(1e6 / ${CPU_DO[$phase]}))") effects/s; latency p50 ${P50[$phase]} ms (goal <= 2), p99 ${P99[$phase]} ms (goal <= 10)"
done
if [ -n "${TP_CHUNK[empty]:-}" ] && [ -n "${TP_CHUNK[1M]:-}" ]; then
	python3 - <<EOF
e_c, e_d, m_c, m_d = ${TP_CHUNK[empty]}, ${TP_DO[empty]}, ${TP_CHUNK[1M]}, ${TP_DO[1M]}
e50, m50, e99, m99 = ${P50[empty]}, ${P50[1M]}, ${P99[empty]}, ${P99[1M]}
ec, ed, mc, md = ${CPU_CHUNK[empty]}, ${CPU_DO[empty]}, ${CPU_CHUNK[1M]}, ${CPU_DO[1M]}
print("1M/empty: throughput chunked %.2f, DO-loop %.2f (goal >= 0.9); CPU per effect chunked %.2f, DO-loop %.2f (empty/1M); latency p50 %.2f ms vs %.2f ms, p99 %.2f ms vs %.2f ms (1M vs empty)"
      % (m_c / e_c, m_d / e_d, ec / mc, ed / md, m50, e50, m99, e99))
EOF
fi
echo "dispatcher at end: $(rss) (goal: RSS < 64 MB)"
DUP=$(curl -s "$SINK_URL/__stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keys_2xx_more_than_once"])')
echo "keys delivered more than once: $DUP"
