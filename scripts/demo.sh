#!/usr/bin/env bash
# scripts/demo.sh — build, install and show idemgate on a throwaway cluster.
#
# As root on Debian 12: installs the build dependencies
# (scripts/install-deps.sh --build), builds and installs
# the extension, starts a temporary PostgreSQL with the library preloaded
# (the embedded dispatcher on), runs examples/demo.sql — a webhook delivered
# twice, a changed payload, an expired lease, an approval — prints what
# happened, then stops the cluster and removes it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh --build
make -s && make -s install >/dev/null

bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/idemgate-demo.XXXXXX)
chown postgres "$work"
port=${PORT:-55433}
as_pg() { (cd / && runuser -u postgres -- "$@"); }	# from /: the checkout may be closed to postgres
cleanup() {
  as_pg "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  [ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A loopback HTTP sink stands in for the provider (an email API, a CRM).
cc -O2 -o "$work/sink" test/sink/sink.c
"$work/sink" --port 0 --port-file "$work/sink.port" --log "$work/sink.log" --max-seconds 120 --quiet &
sink_pid=$!
for _ in $(seq 50); do [ -s "$work/sink.port" ] && break; sleep 0.1; done

as_pg "$bindir/initdb" -D "$work/data" -A trust >/dev/null
cat >> "$work/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$work'
listen_addresses = ''
shared_preload_libraries = 'idemgate'
idemgate.database = 'demo'
idemgate.poll_interval = '200ms'
CONF
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null
as_pg "$bindir/createdb" -h "$work" -p "$port" demo
cp examples/demo.sql "$work/demo.sql"; chown postgres "$work/demo.sql"
as_pg "$bindir/psql" -h "$work" -p "$port" -X -q -d demo \
  -v sink="http://127.0.0.1:$(cat "$work/sink.port")" -f "$work/demo.sql"
echo
echo "The provider (loopback sink) received:"
python3 - "$work/sink.log" <<'PY' || cat "$work/sink.log"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    body = r.get("body") or {}
    print(f"  POST {r['path']}  Idempotency-Key: {r['idempotency_key']}  -> {r['status']}  payload={json.dumps(body.get('payload'))}")
PY
