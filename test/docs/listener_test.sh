#!/usr/bin/env bash
# test/docs/listener_test.sh — examples/alerts_listener.sh against a real
# server that goes away: a throwaway cluster (initdb as postgres in a temp
# dir, shared_preload_libraries = 'idemgate', idemgate.database = 'app'),
# the listener in the background as a reader role, an alert transition,
# the server stopped for a few seconds and started again, a second
# transition. Passes when both payloads were printed, with their message,
# and the listener said it lost the connection and reconnected.
#
# As root (the cluster runs as postgres), after make install. Port: the
# first free one from 55432 (LISTENER_TEST_PORT to choose). Bounded:
# each wait at most 30 s. Prints "N passed, M failed" last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(pg_config --bindir)

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - listener: $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - listener: $1"; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

[ "$(id -u)" -eq 0 ] || { not_ok "run as root (the cluster runs as postgres)"; finish; }
port=${LISTENER_TEST_PORT:-}
if [ -z "$port" ]; then
  for p in $(seq 55432 55499); do
    python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', $p))" 2>/dev/null &&
      [ ! -e "/tmp/.s.PGSQL.$p" ] && { port=$p; break; }
  done
fi
[ -n "$port" ] || { not_ok "no free port from 55432"; finish; }

T=$(mktemp -d /tmp/idemgate-listener.XXXXXX)
chmod 755 "$T"; chown postgres "$T"
lpid=
cleanup() {
  [ -n "$lpid" ] && kill -- "-$lpid" 2>/dev/null
  [ -f "$T/pg/postmaster.pid" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -m immediate stop >/dev/null 2>&1
  if [ -n "${KEEP:-}" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

pg_ctl() { runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -l "$T/pg.log" -w "$@" >/dev/null; }
psql_su() { runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -h "$T" -p "$port" "$@"; }
# wait_for FILE PATTERN COUNT → COUNT lines of FILE match PATTERN, within 30 s
wait_for() {
  for _ in $(seq 300); do
    [ "$(grep -cE "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

runuser -u postgres -- "$bindir/initdb" -D "$T/pg" -U postgres -A trust >"$T/initdb.log" 2>&1 ||
  { not_ok "initdb: $(tail -1 "$T/initdb.log")"; finish; }
cat >>"$T/pg/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$T'
shared_preload_libraries = 'idemgate'
idemgate.database = 'app'
EOF
pg_ctl start || { not_ok "the server starts: $(tail -3 "$T/pg.log")"; finish; }
psql_su -d postgres -c 'CREATE DATABASE app' &&
  psql_su -d app -c "CREATE EXTENSION idemgate; CREATE ROLE oncall LOGIN; SELECT idemgate.grant_role('oncall', 'reader');" >/dev/null ||
  { not_ok "CREATE EXTENSION and the reader role"; finish; }

# The listener in its own process group, as the README's reader role.
PGHOST=$T PGPORT=$port PGDATABASE=app PGUSER=oncall \
  setsid bash "$root/examples/alerts_listener.sh" >"$T/out" 2>"$T/err" &
lpid=$!
if wait_for "$T/out" '^== .* firing now$' 1; then ok "connects and prints the alerts firing now"
else not_ok "connects and prints the alerts firing now"; sed 's/^/#   /' "$T/out" "$T/err"; finish; fi
sleep 1	# its LISTEN runs right after the view

# One: the kill switch off is an alert transition (firing).
psql_su -d app -c "SELECT idemgate.set_actions_enabled(false, 'listener-test', 'first transition')" >/dev/null &&
  psql_su -d app -c 'SELECT idemgate.publish_alerts()' >/dev/null
one='^== [0-9:]+ \{.*"alert" ?: ?"kill_switch_off".*"state" ?: ?"firing".*"message" ?: ?"[^"]*first transition'
if wait_for "$T/out" "$one" 1; then ok "prints the first payload, with its message"
else not_ok "prints the first payload, with its message"; sed 's/^/#   /' "$T/out"; fi

# The server goes away for a few seconds (a restart, a failover).
pg_ctl -m fast stop || not_ok "the server stops"
sleep 4
pg_ctl start || { not_ok "the server starts again: $(tail -3 "$T/pg.log")"; finish; }
if wait_for "$T/out" '^== .* firing now$' 2; then ok "reconnects after the restart and prints the alerts firing now again"
else not_ok "reconnects after the restart"; sed 's/^/#   /' "$T/out" "$T/err"; fi
if grep -q 'connection lost' "$T/err" && grep -q 'cannot connect: ' "$T/err" && grep -q 'next attempt in 1 s' "$T/err" &&
   grep -q 'next attempt in 2 s' "$T/err"; then
  ok "says the connection was lost and retries with a growing wait (1 s, 2 s, ...)"
else
  not_ok "says the connection was lost and retries with backoff"; sed 's/^/#   /' "$T/err"
fi
kill -0 "$lpid" 2>/dev/null && ok "still running (did not exit on the restart)" || not_ok "still running after the restart"
sleep 1

# Two: the kill switch back on (cleared), after the restart.
psql_su -d app -c "SELECT idemgate.set_actions_enabled(true, 'listener-test', 'second transition')" >/dev/null &&
  psql_su -d app -c 'SELECT idemgate.publish_alerts()' >/dev/null
two='^== [0-9:]+ \{.*"alert" ?: ?"kill_switch_off".*"state" ?: ?"cleared".*"message" ?: ?"'
if wait_for "$T/out" "$two" 1; then ok "prints the second payload, after the restart"
else not_ok "prints the second payload, after the restart"; sed 's/^/#   /' "$T/out" "$T/err"; fi
finish
