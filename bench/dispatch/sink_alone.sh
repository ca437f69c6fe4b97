#!/usr/bin/env bash
#
# bench/dispatch/sink_alone.sh
#	  Measures the loopback sink's own ceiling: keep-alive POSTs of a
#	  ~200-byte JSON effect (unique Idempotency-Key each) from wrk, with the
#	  sink logging every request as it does in tests. The sink is pinned to
#	  CPU 0 and wrk to CPU 1 when there are two CPUs, so the figure is what
#	  one core of sink can take. Bounded: DURATION + ~5 s.
#
# Usage: bash bench/dispatch/sink_alone.sh
#	  DURATION=8     seconds of load
#	  CONNS=64       keep-alive connections
#	  SINK_LOG=1     0 to run the sink without --log
# Last line: sink_alone_rps=NNNNN
#
set -eu

cd "$(dirname "$0")/../.."
DURATION=${DURATION:-8}
CONNS=${CONNS:-64}
SINK_LOG=${SINK_LOG:-1}
SINK=test/sink/sink

if ! command -v wrk >/dev/null 2>&1; then
	echo "installing wrk" >&2
	DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q wrk >/dev/null
fi
cc -O2 -Wall -Wextra -Werror -o "$SINK" test/sink/sink.c

TMP=$(mktemp -d /tmp/sink-bench.XXXXXX)
SINK_PID=
cleanup() {
	if [ -n "$SINK_PID" ] && kill -0 "$SINK_PID" 2>/dev/null; then
		kill -TERM "$SINK_PID" 2>/dev/null
		wait "$SINK_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# A dispatcher-like request: POST, JSON body, a fresh Idempotency-Key.
cat >"$TMP/post.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"run_id":"0a8f2b7e-1c4d-4e5f-9a6b-7c8d9e0f1a2b","effect":"send_email","attempt":1,"payload":{"to":"someone@example.com","subject":"Order 12345 shipped","template":"shipping_v2","locale":"en-US"}}'
local n = 0
request = function()
  n = n + 1
  wrk.headers["Idempotency-Key"] = "bench-" .. n
  return wrk.format()
end
EOF

PIN_SINK=
PIN_LOAD=
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
	PIN_SINK="taskset -c 0"
	PIN_LOAD="taskset -c 1"
fi

LOGARG=
[ "$SINK_LOG" = 1 ] && LOGARG="--log $TMP/sink.log"
# shellcheck disable=SC2086
$PIN_SINK "$SINK" --port 0 --port-file "$TMP/port" $LOGARG \
	--max-seconds $((DURATION + 30)) --quiet &
SINK_PID=$!
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT=$(cat "$TMP/port")

# shellcheck disable=SC2086
timeout $((DURATION + 15)) $PIN_LOAD wrk -t1 -c"$CONNS" -d"${DURATION}s" \
	--latency -s "$TMP/post.lua" "http://127.0.0.1:$PORT/ok" | tee "$TMP/wrk.out"

STATS=$(curl -s -m 5 "http://127.0.0.1:$PORT/__stats")
kill -TERM "$SINK_PID"
wait "$SINK_PID"
SINK_PID=

RPS=$(awk '/^Requests\/sec:/ { printf "%d", $2 }' "$TMP/wrk.out")
if grep -q 'Non-2xx\|Socket errors' "$TMP/wrk.out"; then
	echo "warning: wrk saw errors or non-2xx responses" >&2
fi
REQS=$(printf '%s' "$STATS" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p')
DUPS=$(printf '%s' "$STATS" | sed -n 's/.*"keys_2xx_more_than_once":\([0-9]*\).*/\1/p')
if [ "$SINK_LOG" = 1 ]; then
	echo "sink logged $(wc -l <"$TMP/sink.log") lines for $REQS requests ($DUPS keys answered 2xx twice)"
else
	echo "sink counted $REQS requests (no log)"
fi
echo "conns=$CONNS duration=${DURATION}s log=$SINK_LOG pinned=${PIN_SINK:+yes}"
echo "sink_alone_rps=$RPS"
