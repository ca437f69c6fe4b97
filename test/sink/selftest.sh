#!/usr/bin/env bash
#
# test/sink/selftest.sh
#	  Builds the loopback HTTP sink and checks every mode with curl: status
#	  codes, Retry-After forms, the JSONL log, drop, reset and partial
#	  answers (each only after the whole request), /seq per key, /__stats,
#	  bad input, keep-alive, pipelining and the exit conditions.
#
# Usage: bash test/sink/selftest.sh      (from anywhere; 15–30 s, bounded)
# Last line: "N passed, M failed"; exit status 1 when anything failed.
#
set -u

cd "$(dirname "$0")/../.." || exit 1
SINK=test/sink/sink
PASSED=0
FAILED=0
TMP=$(mktemp -d /tmp/sink-selftest.XXXXXX)
SINK_PID=

# shellcheck disable=SC2317  # invoked by trap
# cleanup stops the sink we started (by pid) and removes the temp dir.
cleanup() {
	if [ -n "$SINK_PID" ] && kill -0 "$SINK_PID" 2>/dev/null; then
		kill -TERM "$SINK_PID" 2>/dev/null
		wait "$SINK_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# pass/fail record one assertion.
pass() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $1${2:+: $2}"; }

# check NAME EXPECTED ACTUAL passes when the two strings are equal.
check() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected [$2] got [$3]"; fi
}

# finish prints the summary line and exits.
finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit $?
}

# need installs a Debian package when its command is missing.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q "$2" >/dev/null 2>&1
	fi
	command -v "$1" >/dev/null 2>&1 || { fail "need $1 (apt-get install $2)"; finish; }
}

# wait_file FILE waits up to 5 s for FILE to exist.
wait_file() {
	for _ in $(seq 50); do [ -s "$1" ] && return 0; sleep 0.1; done
	return 1
}

# start_sink LOG PORTFILE ARGS... starts a sink in the background.
start_sink() {
	local log=$1 pf=$2
	shift 2
	"$SINK" --port 0 --log "$log" --port-file "$pf" --quiet "$@" &
	LAST_PID=$!
	wait_file "$pf"
}

# logq N FILTER waits up to 3 s for log line n=N and applies a jq filter.
logq() {
	local line=
	for _ in $(seq 60); do
		line=$(jq -c "select(.n == $1)" "$LOG" 2>/dev/null)
		[ -n "$line" ] && break
		sleep 0.05
	done
	[ -n "$line" ] && printf '%s\n' "$line" | jq -r "$2"
}

# lines FILE N waits up to 3 s for FILE to have N lines and prints its count.
lines() {
	local n=0
	for _ in $(seq 60); do
		n=$(wc -l <"$1" | tr -d ' ')
		[ "$n" -ge "$2" ] && break
		sleep 0.05
	done
	echo "$n"
}

# code URL [curl args] prints the status code (000 when no response).
code() {
	local url=$1
	shift
	curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" "$url"
}

# raw DATA sends bytes over a fresh TCP connection and prints the reply
# (the request must end the connection, e.g. with Connection: close).
raw() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
		printf '%b' "$1" >&3
		timeout 3 cat <&3
	) 2>/dev/null
}

need cc gcc
need curl curl
need jq jq

# --- build -----------------------------------------------------------------
if cc -O2 -Wall -Wextra -Werror -o "$SINK" test/sink/sink.c; then
	pass "build with -Wall -Wextra -Werror"
else
	fail "build"
	finish
fi

# --- start -----------------------------------------------------------------
LOG=$TMP/sink.log
if start_sink "$LOG" "$TMP/port" --max-seconds 90; then
	SINK_PID=$LAST_PID
	PORT=$(cat "$TMP/port")
	pass "port file written (port $PORT)"
else
	fail "sink did not write its port file"
	finish
fi
B=http://127.0.0.1:$PORT
N=0		# sequence number of the last logged request

# --- /ok ---------------------------------------------------------------------
BODY=$(curl -s -m 5 -X POST -H 'Idempotency-Key: key-ok-1' \
	-H 'Content-Type: application/json' -H 'X-Trace-Id: tr-1' \
	--data-binary $'{"effect": "email",\n "n": 1, "to": ["a@b"]}' "$B/ok")
N=$((N + 1))
check "/ok body" '{"id":"prov-1","ok":true}' "$BODY"
check "log n" "$N" "$(logq $N .n)"
check "log method" POST "$(logq $N .method)"
check "log path" /ok "$(logq $N .path)"
check "log idempotency_key" key-ok-1 "$(logq $N .idempotency_key)"
check "log content_type" application/json "$(logq $N .content_type)"
check "log X- header" tr-1 "$(logq $N '.headers["X-Trace-Id"]')"
check "log status" 200 "$(logq $N .status)"
check "log body embedded as JSON" 'object email 1' "$(logq $N '"\(.body|type) \(.body.effect) \(.body.n)"')"
check "log t is a float near now" 1 "$(logq $N "if (.t|type)==\"number\" and ((.t - $(date +%s)) | fabs) < 60 then 1 else 0 end")"

BODY=$(curl -s -m 5 -d '{}' "$B/ok?field=provider_id")
N=$((N + 1))
check "/ok?field=NAME" "{\"provider_id\":\"prov-$N\",\"ok\":true}" "$BODY"
check "log path keeps query" "/ok?field=provider_id" "$(logq $N .path)"

BODY=$(curl -s -m 5 -d '{}' "$B/ok?noid=1")
N=$((N + 1))
check "/ok?noid=1" '{}' "$BODY"
check "log idempotency_key null" null "$(logq $N .idempotency_key)"

curl -s -o /dev/null -m 5 -H 'Content-Type: text/plain' \
	--data-binary $'say "hi"\n\t\\ end' "$B/ok"
N=$((N + 1))
check "non-JSON body logged as string" "string" "$(logq $N '.body|type')"
check "string body escaped exactly" $'say "hi"\n\t\\ end' "$(logq $N .body)"

check "unknown path answers 200" 200 "$(code "$B/some/where?x=1" -d '{}')"
N=$((N + 1))
check "unknown path logged" "/some/where?x=1" "$(logq $N .path)"

# --- /status -------------------------------------------------------------
curl -s -m 5 -D "$TMP/h" -o "$TMP/b" "$B/status/503?retry_after=7" -d '{}'
N=$((N + 1))
check "/status/503" 503 "$(head -1 "$TMP/h" | cut -d' ' -f2)"
check "Retry-After seconds" "Retry-After: 7" "$(grep -i '^retry-after' "$TMP/h" | tr -d '\r')"
check "error body" '{"error":"injected"}' "$(cat "$TMP/b")"
check "log status 503" 503 "$(logq $N .status)"

# Outage windows: down for the whole period, never down, bad arguments.
check "/windows down" 503 "$(code "$B/windows/86400000,86400000" -d '{}')"
check "/windows up" 200 "$(code "$B/windows/86400000,0" -d '{}')"
check "/windows zero period" 400 "$(code "$B/windows/0,0" -d '{}')"
check "/windows down longer than period" 400 "$(code "$B/windows/10,20" -d '{}')"
N=$((N + 4))

curl -s -m 5 -o "$TMP/b" "$B/status/400?error_body=%C3%A9x&error_repeat=3" -d '{}'
N=$((N + 1))
check "error_body repeated" 'éxéxéx' "$(cat "$TMP/b")"
check "log rx (kernel receive time) before t" 1 "$(logq $N 'if (.rx|type)=="number" and .rx <= .t and (.t - .rx) < 5 then 1 else 0 end')"

curl -s -m 5 -D "$TMP/h" -o /dev/null "$B/status/429?retry_after_date=120" -d '{}'
N=$((N + 1))
RA=$(grep -i '^retry-after' "$TMP/h" | tr -d '\r' | cut -d' ' -f2-)
if [[ "$RA" =~ ^(Mon|Tue|Wed|Thu|Fri|Sat|Sun),\ [0-9]{2}\ (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\ [0-9]{4}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ GMT$ ]]; then
	pass "Retry-After IMF-fixdate form ($RA)"
else
	fail "Retry-After IMF-fixdate form" "got [$RA]"
fi
DELTA=$(( $(date -u -d "$RA" +%s 2>/dev/null || echo 0) - $(date -u +%s) ))
if [ "$DELTA" -ge 115 ] && [ "$DELTA" -le 121 ]; then
	pass "Retry-After date is ~120 s ahead"
else
	fail "Retry-After date is ~120 s ahead" "delta $DELTA"
fi

curl -s -m 5 -D "$TMP/h" -o /dev/null "$B/status/302?location=http%3A%2F%2F127.0.0.1%2Fmoved" -d '{}'
N=$((N + 1))
check "/status/302 Location" "Location: http://127.0.0.1/moved" "$(grep -i '^location' "$TMP/h" | tr -d '\r')"
check "/status/201 ok body" "{\"id\":\"prov-$((N + 1))\",\"ok\":true}" "$(curl -s -m 5 -d '{}' "$B/status/201")"
N=$((N + 1))
check "/status/204" 204 "$(code "$B/status/204" -d '{}')"
N=$((N + 1))
check "/status/abc is 400" 400 "$(code "$B/status/abc")"
N=$((N + 1))

# --- /delay --------------------------------------------------------------
T=$(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' "$B/delay/300" -d '{}')
N=$((N + 1))
check "/delay/300 status" 200 "${T% *}"
if awk -v t="${T#* }" 'BEGIN { exit !(t >= 0.29 && t < 2) }'; then
	pass "/delay/300 waited (${T#* } s)"
else
	fail "/delay/300 waited" "${T#* } s"
fi

# A delayed request must not hold up others.
curl -s -o /dev/null -m 5 "$B/delay/1500" -d '{}' &
DPID=$!
sleep 0.2
T=$(curl -s -o /dev/null -m 5 -w '%{time_total}' "$B/ok" -d '{}')
if awk -v t="$T" 'BEGIN { exit !(t < 0.5) }'; then
	pass "/ok answered during another /delay ($T s)"
else
	fail "/ok answered during another /delay" "$T s"
fi
wait "$DPID"
N=$((N + 2))

curl -s -o /dev/null -m 0.5 "$B/delay/3000" -d '{"k":1}'
RC=$?
N=$((N + 1))
check "client gave up on /delay/3000 (curl 28)" 28 "$RC"
check "abandoned delay logged status 0, fault abandoned" "0 abandoned" "$(logq $N '"\(.status) \(.fault)"')"
check "abandoned delay logged body" 1 "$(logq $N .body.k)"

# --- /drop, /reset and /partial --------------------------------------------
curl -s -o /dev/null -m 5 "$B/drop" -H 'Idempotency-Key: key-drop' -d '{}'
RC=$?
N=$((N + 1))
check "/drop gives an empty reply (curl 52)" 52 "$RC"
check "/drop logged status 0" "0 key-drop" "$(logq $N '"\(.status) \(.idempotency_key)"')"

curl -s -o /dev/null -m 5 "$B/reset" -d '{}'
RC=$?
N=$((N + 1))
check "/reset resets the connection (curl 56)" 56 "$RC"
check "/reset logged status 0" "0 reset" "$(logq $N '"\(.status) \(.fault)"')"
check "/drop logged fault drop" drop "$(logq $((N - 1)) .fault)"

# /partial: a 200 announcing Content-Length: 100 that stops after 10 bytes.
T=$(curl -s -o "$TMP/b" -m 5 -w '%{http_code} %{size_download}' -H 'Idempotency-Key: key-partial' \
	-d '{"p":1}' "$B/partial")
RC=$?
N=$((N + 1))
check "/partial closes mid-body (curl 18)" 18 "$RC"
check "/partial sent status 200 and 10 body bytes" "200 10" "$T"
check "/partial body is the start of /ok's" "{\"id\":\"pro" "$(cat "$TMP/b")"
check "/partial logged status 0, fault partial, with its body" "0 partial key-partial 1" \
	"$(logq $N '"\(.status) \(.fault) \(.idempotency_key) \(.body.p)"')"
check "/partial logged once" 1 "$(jq -c 'select(.idempotency_key == "key-partial")' "$LOG" | wc -l | tr -d ' ')"

# split_post PATH KEY sends a POST whose 10,000-byte JSON body comes in two
# halves 0.3 s apart; EARLY is how many lines with KEY the log had before
# the second half, REPLY and CAT_RC what the connection gave back after it.
split_post() {
	local half
	half=$(head -c 5000 /dev/zero | tr '\0' 'x')
	EARLY=x REPLY= CAT_RC=x
	{ exec 3<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null || return 1
	printf 'POST %s HTTP/1.1\r\nHost: sink\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{"pad":"%s' \
		"$1" "$2" 10017 "$half" >&3
	sleep 0.3
	EARLY=$(jq -c "select(.idempotency_key == \"$2\")" "$LOG" | wc -l | tr -d ' ')
	printf '%sxxxxxxx"}' "$half" >&3
	REPLY=$(timeout 3 cat <&3 2>"$TMP/err")
	CAT_RC=$?
	REPLY=${REPLY//$'\r'/}
	exec 3<&-
}

# The whole request (head and the body by Content-Length) is read first.
split_post /reset key-reset-split
N=$((N + 1))
check "/reset waits for the whole body" 0 "$EARLY"
check "/reset after the whole body, logged once" "0 reset 10007 1" \
	"$(logq $N '"\(.status) \(.fault) \(.body.pad|length)"') $(jq -c 'select(.idempotency_key == "key-reset-split")' "$LOG" | wc -l | tr -d ' ')"
if [ "$CAT_RC" != 0 ] && grep -qi 'reset' "$TMP/err" && [ -z "$REPLY" ]; then
	pass "/reset answers the whole request with an RST"
else
	fail "/reset answers the whole request with an RST" "rc $CAT_RC, reply [$REPLY], $(cat "$TMP/err")"
fi

split_post /partial key-partial-split
N=$((N + 1))
check "/partial waits for the whole body" 0 "$EARLY"
check "/partial after the whole body, logged once" "0 partial 10007 1" \
	"$(logq $N '"\(.status) \(.fault) \(.body.pad|length)"') $(jq -c 'select(.idempotency_key == "key-partial-split")' "$LOG" | wc -l | tr -d ' ')"
check "/partial: status line, Content-Length 100, 10 bytes, FIN" \
	"0|HTTP/1.1 200 OK|Content-Length: 100|{\"id\":\"pro" \
	"$CAT_RC|$(printf '%s\n' "$REPLY" | head -1)|$(printf '%s\n' "$REPLY" | grep -i '^content-length')|$(printf '%s\n' "$REPLY" | tail -1)"

# --- /seq ----------------------------------------------------------------
GOT=
for k in A B A A B A; do
	GOT="$GOT $(code "$B/seq/503,429,200" -H "Idempotency-Key: seq-$k" -d '{}')"
done
N=$((N + 6))
check "/seq per key (A B A A B A)" " 503 503 429 200 429 200" "$GOT"

curl -s -o /dev/null -m 5 "$B/seq/drop,200" -H 'Idempotency-Key: seq-drop' -d '{}'
RC=$?
check "/seq drop step" 52 "$RC"
check "/seq after drop" 200 "$(code "$B/seq/drop,200" -H 'Idempotency-Key: seq-drop' -d '{}')"
N=$((N + 2))

curl -s -o /dev/null -m 5 "$B/seq/partial,200" -H 'Idempotency-Key: seq-partial' -d '{}'
RC=$?
check "/seq partial step" 18 "$RC"
check "/seq after partial" 200 "$(code "$B/seq/partial,200" -H 'Idempotency-Key: seq-partial' -d '{}')"
N=$((N + 2))

T=$(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' -H 'Idempotency-Key: seq-delay' -d '{}' "$B/seq/delay400,500")
if [ "${T% *}" = 200 ] && awk -v t="${T#* }" 'BEGIN { exit !(t >= 0.39) }'; then
	pass "/seq delay400 step ($T)"
else
	fail "/seq delay400 step" "$T"
fi
check "/seq next step 500" 500 "$(code "$B/seq/delay400,500" -H 'Idempotency-Key: seq-delay' -d '{}')"
N=$((N + 2))

# --- /mix ----------------------------------------------------------------
GOT=$(for _ in $(seq 40); do code "$B/mix/200:3,503,429:0" -d '{}'; echo; done | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')
N=$((N + 40))
C200=$(echo "$GOT" | sed -n 's/.*200=\([0-9]*\).*/\1/p')
C503=$(echo "$GOT" | sed -n 's/.*503=\([0-9]*\).*/\1/p')
if [ -n "$C200" ] && [ -n "$C503" ] && [ "$C200" -ge 18 ] && [ "$C200" -le 38 ] &&
	[ $((C200 + C503)) = 40 ]; then
	pass "/mix weights 3:1:0 over 40 requests ($GOT)"
else
	fail "/mix weights 3:1:0" "$GOT"
fi
check "/mix single step" 204 "$(code "$B/mix/204" -d '{}')"
curl -s -o /dev/null -m 5 "$B/mix/partial:2" -d '{}'
check "/mix partial step (curl 18)" 18 "$?"
check "/mix bad weight" 400 "$(code "$B/mix/200:x" -d '{}')"
check "/mix bad step" 400 "$(code "$B/mix/bogus:1" -d '{}')"
N=$((N + 4))

curl -s -m 5 -D "$TMP/h" -o /dev/null -H 'Idempotency-Key: seq-ra' -d '{}' "$B/seq/429,200?retry_after=3"
check "/seq honours retry_after" "Retry-After: 3" "$(grep -i '^retry-after' "$TMP/h" | tr -d '\r')"
check "/seq honours field" '{"pid":"prov-'$((N + 2))'","ok":true}' \
	"$(curl -s -m 5 -H 'Idempotency-Key: seq-ra' -d '{}' "$B/seq/429,200?retry_after=3&field=pid")"
N=$((N + 2))
check "/seq bad step is 400" 400 "$(code "$B/seq/200,nope" -d '{}')"
N=$((N + 1))

# --- keep-alive, HTTP/1.0, 100-continue ----------------------------------
CONNS=$(curl -s -m 5 -w '%{num_connects} ' -d '{}' \
	-o /dev/null "$B/ok" -o /dev/null "$B/ok" -o /dev/null "$B/ok")
N=$((N + 3))
check "keep-alive reuses one connection" "1 0 0 " "$CONNS"
check "HTTP/1.0" 200 "$(code "$B/ok" -0 -d '{}')"
N=$((N + 1))
head -c 5000 /dev/zero | tr '\0' 'x' >"$TMP/5k"
T=$(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' -H 'Expect: 100-continue' --data-binary @"$TMP/5k" "$B/ok")
N=$((N + 1))
if [ "${T% *}" = 200 ] && awk -v t="${T#* }" 'BEGIN { exit !(t < 0.9) }'; then
	pass "Expect: 100-continue answered promptly ($T)"
else
	fail "Expect: 100-continue" "$T"
fi

# --- raw HTTP: pipelining, chunked, bad input -------------------------------
R=$(raw 'POST /ok HTTP/1.1\r\nIdempotency-Key: pipe-1\r\nContent-Length: 2\r\n\r\n{}POST /status/503 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n')
N=$((N + 3))
check "pipelined responses in order" "200 503 200" "$(printf '%s' "$R" | grep -ao 'HTTP/1.1 [0-9]*' | cut -d' ' -f2 | xargs)"

R=$(raw 'POST /ok HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n{"a"\r\n3;x=y\r\n:7}\r\n0\r\n\r\n')
N=$((N + 1))
check "chunked body accepted" 200 "$(printf '%s' "$R" | head -1 | cut -d' ' -f2)"
check "chunked body decoded in log" 7 "$(logq $N .body.a)"

R=$(raw 'GARBAGE\r\n\r\n')
N=$((N + 1))
check "malformed request line is 400" 400 "$(printf '%s' "$R" | head -1 | cut -d' ' -f2)"
R=$(raw 'GET /ok HTTP/1.1\r\nBad Header: x\r\n\r\n')
N=$((N + 1))
check "malformed header is 400" 400 "$(printf '%s' "$R" | head -1 | cut -d' ' -f2)"
R=$(raw "GET /ok HTTP/1.1\r\nX-Big: $(head -c 17000 /dev/zero | tr '\0' 'a')\r\n\r\n")
N=$((N + 1))
check "header over 16 KiB is 431" 431 "$(printf '%s' "$R" | head -1 | cut -d' ' -f2)"
head -c 1100000 /dev/zero | tr '\0' 'x' >"$TMP/big"
check "body over 1 MiB is 413" 413 "$(code "$B/ok" --data-binary @"$TMP/big")"
N=$((N + 1))
check "sink still answers after bad input" 200 "$(code "$B/ok" -d '{}')"
N=$((N + 1))
check "every request logged so far" "$N" "$(lines "$LOG" "$N")"
check "log is valid JSONL" "$N" "$(jq -c . "$LOG" 2>/dev/null | wc -l | tr -d ' ')"

# --- /__stats --------------------------------------------------------------
check "POST /__reset_stats" 200 "$(code "$B/__reset_stats" -X POST)"
for k in s1 s1 s3; do code "$B/ok" -H "Idempotency-Key: $k" -d '{}' >/dev/null; done
for k in s2 s2; do code "$B/status/503" -H "Idempotency-Key: $k" -d '{}' >/dev/null; done
code "$B/ok" -d '{}' >/dev/null
N=$((N + 6))
curl -s -m 5 "$B/__stats" >"$TMP/stats"
check "stats requests" 6 "$(jq .requests "$TMP/stats")"
check "stats by_path" "4 2" "$(jq -r '"\(.by_path["/ok"]) \(.by_path["/status/503"])"' "$TMP/stats")"
check "stats distinct_keys" 3 "$(jq .distinct_keys "$TMP/stats")"
check "stats keys_seen_more_than_once" 2 "$(jq .keys_seen_more_than_once "$TMP/stats")"
check "stats keys_2xx_more_than_once" 1 "$(jq .keys_2xx_more_than_once "$TMP/stats")"
lines "$LOG" "$N" >/dev/null
sleep 0.1
check "/__stats and /__reset_stats not logged" "$N" "$(wc -l <"$LOG" | tr -d ' ')"
check "sequence continues after reset" "$((N + 1))" \
	"$(curl -s -m 5 -d '{}' "$B/ok" | jq -r '.id | ltrimstr("prov-")')"
N=$((N + 1))

# --- exit conditions -------------------------------------------------------
kill -TERM "$SINK_PID"
wait "$SINK_PID"
RC=$?
SINK_PID=
check "SIGTERM exits 0" 0 "$RC"
check "log complete after SIGTERM" "$N" "$(wc -l <"$LOG" | tr -d ' ')"

if start_sink "$TMP/l2" "$TMP/p2" --max-seconds 10 --max-requests 2; then
	P2=$(cat "$TMP/p2")
	GOT="$(code "http://127.0.0.1:$P2/ok" -d '{}') $(code "http://127.0.0.1:$P2/ok" -d '{}')"
	check "--max-requests answers the last request" "200 200" "$GOT"
	timeout 5 tail --pid="$LAST_PID" -f /dev/null
	if kill -0 "$LAST_PID" 2>/dev/null; then
		fail "--max-requests 2 exits"
		kill -TERM "$LAST_PID"
	else
		wait "$LAST_PID"
		check "--max-requests 2 exits 0" 0 $?
	fi
	check "--max-requests log lines" 2 "$(wc -l <"$TMP/l2" | tr -d ' ')"
else
	fail "second sink did not start"
fi

START=$(date +%s%N)
if start_sink "$TMP/l3" "$TMP/p3" --max-seconds 1; then
	wait "$LAST_PID"
	RC=$?
	MS=$(( ($(date +%s%N) - START) / 1000000 ))
	if [ "$RC" = 0 ] && [ "$MS" -ge 900 ] && [ "$MS" -lt 3000 ]; then
		pass "--max-seconds 1 exits 0 after ${MS} ms"
	else
		fail "--max-seconds 1" "rc $RC after $MS ms"
	fi
else
	fail "third sink did not start"
fi

if "$SINK" --host ::1 --port 0 --port-file "$TMP/p6" --max-seconds 5 --max-requests 1 --quiet 2>/dev/null &
	P6_PID=$!
	wait_file "$TMP/p6"; then
	check "IPv6 ::1" 200 "$(code "http://[::1]:$(cat "$TMP/p6")/ok" -g -d '{}')"
	wait "$P6_PID"
else
	wait "$P6_PID" 2>/dev/null
	echo "skip - IPv6 ::1 not available"
fi

finish
