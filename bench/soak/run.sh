#!/usr/bin/env bash
#
# bench/soak/run.sh
#	  The soak: claims, approvals, enqueues and deliveries flowing to the
#	  loopback sink (test/sink/sink.c, answering 200/429/503/500/400,
#	  delays past the timeout, dropped and reset connections and responses
#	  cut off mid-body, each after reading the whole request, at random) for
#	  --minutes, while at random moments a dispatcher is killed (SIGKILL
#	  or SIGTERM), the postmaster is killed and started again, the kill
#	  switch is flipped, a type paused, and purge, reinject_all, cancels
#	  and resolve_effect run, and one provider has outage windows (15 s of
#	  503 every 40 s). It checks as it goes and after a drain; see
#	  bench/soak/soak.py for what counts as lost, duplicated and held.
#	  Last lines: "N passed, M failed", then
#	  "soak: N min, E effects, L lost, D duplicated to non-idempotent
#	  endpoints, RSS a→b MB, p99 p ms".
#
#	  Runs as root after make install. Its own throw-away cluster runs as
#	  postgres on a free port (Unix socket only) and the sink listens on
#	  127.0.0.1 only; everything it started is stopped on exit (trap).
#
#	  bash bench/soak/run.sh --minutes 3             # CI (scripts/test.sh)
#	  bash bench/soak/run.sh --minutes 60            # the figures in bench/README.md
#	  bash bench/soak/run.sh --minutes 10 --faults off --rate 300
#	                                                  # steady state: rate and memory
#	  Options: --minutes N (default 3), --faults on|off, --rate R (automatic
#	  runs/s, default 30), --approval-rate R (default 5), --fault-gap S
#	  (mean seconds between faults, default 8), --seed N, --keep (keep the
#	  directory with the server, sink and pgbench logs).
#	  Environment: PGBIN, SYNC (synchronous_commit of the database the
#	  dispatchers serve: off by default, so the dispatchers' own commits
#	  are asynchronous unless they ask otherwise; the clients commit with
#	  synchronous_commit on, as an application that must not lose its
#	  writes would).
#
set -eu
cd "$(dirname "$0")/../.."
MINUTES=3
FAULTS=on
RATE=30
APPROVAL_RATE=5
FAULT_GAP=8
SEED=
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
		--minutes) MINUTES=$2; shift 2 ;;
		--faults) FAULTS=$2; shift 2 ;;
		--rate) RATE=$2; shift 2 ;;
		--approval-rate) APPROVAL_RATE=$2; shift 2 ;;
		--fault-gap) FAULT_GAP=$2; shift 2 ;;
		--seed) SEED=$2; shift 2 ;;
		--keep) KEEP=1; shift ;;
		*) echo "usage: bash bench/soak/run.sh [--minutes N] [--faults on|off] [--rate R] [--approval-rate R] [--fault-gap S] [--seed N] [--keep]" >&2; exit 2 ;;
	esac
done
PGBIN=${PGBIN:-$(pg_config --bindir)}
SYNC=${SYNC:-off}
TMP=$(mktemp -d /tmp/idemgate-soak.XXXXXX)
chmod 755 "$TMP"
chown postgres "$TMP"
RUNAS="runuser -u postgres --"
SINK_PID=
DRIVER_PID=
cleanup() {
	if [ -n "$DRIVER_PID" ] && kill -0 "$DRIVER_PID" 2>/dev/null; then
		kill -TERM "$DRIVER_PID" 2>/dev/null || true
		wait "$DRIVER_PID" 2>/dev/null || true
	fi
	$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -m immediate stop >/dev/null 2>&1 || true
	if [ -n "$SINK_PID" ]; then kill -TERM "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true; fi
	if [ "$KEEP" = 1 ]; then echo "kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free TCP port number for the cluster (it listens on its Unix socket only).
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cc -O2 -o "$TMP/sink" test/sink/sink.c
SINK_SECS=$(python3 -c "print(int($MINUTES * 60 + 600))")
"$TMP/sink" --port 0 --port-file "$TMP/sink.port" --log "$TMP/sink.jsonl" \
	--max-seconds "$SINK_SECS" ${SEED:+--seed "$SEED"} --quiet &
SINK_PID=$!
for _ in $(seq 100); do [ -s "$TMP/sink.port" ] && break; sleep 0.1; done
SINK_URL="http://127.0.0.1:$(cat "$TMP/sink.port")"

$RUNAS "$PGBIN/initdb" -D "$TMP/data" -A trust >/dev/null
{
	echo "port = $PORT"
	echo "listen_addresses = ''"
	echo "unix_socket_directories = '$TMP'"
	echo "shared_preload_libraries = 'idemgate'"
	echo "idemgate.database = 'soak'"
	echo "idemgate.dispatchers = 2"
	echo "idemgate.max_backoff = '4s'"
	echo "max_worker_processes = 16"
	echo "shared_buffers = '128MB'"
	echo "max_wal_size = '1GB'"
	echo "log_min_messages = warning"
} >>"$TMP/data/postgresql.conf"
$RUNAS "$PGBIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w start >/dev/null
PSQL="$PGBIN/psql -X -q -A -t -v ON_ERROR_STOP=1 -h $TMP -p $PORT -U postgres"
$PSQL -d postgres -c 'CREATE DATABASE soak' -c "ALTER DATABASE soak SET synchronous_commit = $SYNC"
# Every answer at random, by weight: 200, 429 and 503 (Retry-After: 1),
# 500, an answer after the 1 s timeout, a dropped and a reset connection
# and a 200 cut off mid-body (all three after the whole request was read:
# lost after send), 400. plain and steady do not honour the
# Idempotency-Key, idem does. flaky is a provider down (503) for 15 s of
# every 40 s: its circuit opens, holds and probes (docs/dispatcher.md,
# "Endpoint health").
MIX="$SINK_URL/mix/200:80,429:5,503:5,500:3,delay1500:3,drop:1,reset:1,partial:1,400:2?retry_after=1"
$PSQL -d soak -c 'CREATE EXTENSION idemgate' \
	-c "SELECT idemgate.register_endpoint('plain', '$MIX', '1 second', 4, false)" \
	-c "SELECT idemgate.register_endpoint('idem', '$MIX', '1 second', 4, true)" \
	-c "SELECT idemgate.register_endpoint('steady', '$SINK_URL/ok', '5 seconds', 4, false)" \
	-c "SELECT idemgate.register_endpoint('flaky', '$SINK_URL/windows/40000,15000', '1 second', 4, false)" >/dev/null
for _ in $(seq 100); do
	[ "$($PSQL -d soak -c 'SELECT count(*) FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL')" -ge 2 ] && break
	sleep 0.1
done

export PGOPTIONS="-c synchronous_commit=on"
nice -n 5 python3 bench/soak/soak.py --minutes "$MINUTES" --dir "$TMP" --port "$PORT" \
	--pgbin "$PGBIN" --data "$TMP/data" --sink-log "$TMP/sink.jsonl" --sink-pid "$SINK_PID" \
	--faults "$FAULTS" --rate "$RATE" --approval-rate "$APPROVAL_RATE" --fault-gap "$FAULT_GAP" \
	${SEED:+--seed "$SEED"} &
DRIVER_PID=$!
set +e
wait "$DRIVER_PID"
RC=$?
set -e
DRIVER_PID=
exit "$RC"
