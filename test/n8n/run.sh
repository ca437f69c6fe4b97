#!/usr/bin/env bash
# test/n8n/run.sh — the shipped n8n workflows (examples/n8n-postgres-node/*.json), imported
# unchanged into a real n8n and driven on loopback. As root, after
# `make install` (scripts/test.sh runs it as its own suite).
#
# What it does: installs the pinned n8n release from the npm registry into a
# cache directory (reused by later runs), and puppeteer-core to drive
# Debian's chromium; starts a throwaway PostgreSQL with idemgate, the
# loopback sink (test/sink) as the notifier, provider and chat endpoints, and
# n8n with N8N_USER_FOLDER in a temp dir (sqlite, 127.0.0.1); imports two
# credentials by the names the workflows use and the workflows themselves
# with n8n's CLI, activates them, then runs test/n8n/drive.js. Everything it
# started is stopped on exit. Prints "N passed, M failed" last. If n8n cannot
# be installed or started, that is a failure with the reason, never a skip.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

N8N_VERSION=1.123.50          # pinned; see docs/n8n.md for why this patch release
PPTR_VERSION=23.9.0           # puppeteer-core, the last line supporting Node 20
CACHE=${IDEMGATE_N8N_CACHE:-/var/cache/idemgate-n8n}
n8n_dir=$CACHE/n8n-$N8N_VERSION
pptr_dir=$CACHE/puppeteer-core-$PPTR_VERSION

fail_now() {	# fail_now REASON → the whole suite fails with the reason
  echo "not ok - $1"
  echo "0 passed, 1 failed"
  exit 1
}

started=$(date +%s)
command -v node >/dev/null || fail_now "node is not installed (scripts/install-deps.sh installs it)"
node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' ||
  fail_now "n8n $N8N_VERSION needs Node >= 20.19; this is $(node --version) (scripts/install-deps.sh installs 20.20.2 into /usr/local)"
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || fail_now "Debian's chromium is not installed (scripts/install-deps.sh installs it)"

# install_cached DIR PACKAGE-JSON → npm install into DIR unless already done.
install_cached() {
  local dir=$1 json=$2
  [ -f "$dir/.installed" ] && return 0
  echo "# installing into $dir (first run only; several minutes)"
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  printf '%s\n' "$json" >"$dir.tmp/package.json"
  if ! (cd "$dir.tmp" && npm install --no-audit --no-fund --loglevel=error >install.log 2>&1); then
    echo "# npm install failed:"; tail -20 "$dir.tmp/install.log" | sed 's/^/#   /'
    return 1
  fi
  touch "$dir.tmp/.installed"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
}
mkdir -p "$CACHE"
# A native module (n8n's sqlite3) whose prebuilt binary cannot be fetched is
# compiled by node-gyp, which would download Node's headers; the official
# builds (scripts/install-deps.sh installs one) and Debian's or NodeSource's
# packages keep them next to the binary, so point node-gyp there.
node_prefix=$(dirname "$(dirname "$(node -p process.execPath)")")
[ -f "$node_prefix/include/node/common.gypi" ] && export npm_config_nodedir=$node_prefix
# xlsx: n8n pins a tarball URL on a CDN this machine cannot reach; 0.18.5 is
# the same library from the npm registry.
install_cached "$n8n_dir" "{\"name\":\"idemgate-n8n\",\"private\":true,\"dependencies\":{\"n8n\":\"$N8N_VERSION\"},\"overrides\":{\"xlsx\":\"0.18.5\"}}" ||
  fail_now "could not install n8n $N8N_VERSION from the npm registry"
install_cached "$pptr_dir" "{\"name\":\"idemgate-n8n-browser\",\"private\":true,\"dependencies\":{\"puppeteer-core\":\"$PPTR_VERSION\"}}" ||
  fail_now "could not install puppeteer-core $PPTR_VERSION from the npm registry"
n8n=$n8n_dir/node_modules/.bin/n8n
[ "$("$n8n" --version 2>/dev/null)" = "$N8N_VERSION" ] || fail_now "the cached n8n does not run: $("$n8n" --version 2>&1 | tail -1)"

# Scratch space, readable by postgres for the cluster.
T=$(mktemp -d /tmp/idemgate-n8n.XXXXXX)
chmod 755 "$T"; chown postgres "$T"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -f "$T/pg/postmaster.pid" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -m immediate stop >/dev/null 2>&1
  if [ -n "${KEEP:-}" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# PostgreSQL with idemgate (no preload: effects of type n8n_http are pulled
# by the n8n effect worker; alerts are published by the test).
bindir=$(pg_config --bindir)
pgport=$(free_port)
mkdir -p "$T/pg" && chown postgres "$T/pg"
runuser -u postgres -- "$bindir/initdb" -D "$T/pg" -A scram-sha-256 --auth-local=trust -U postgres >"$T/initdb.log" 2>&1 ||
  fail_now "initdb failed: $(tail -3 "$T/initdb.log")"
runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -l "$T/pg.log" -w \
  -o "-p $pgport -k $T -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null ||
  fail_now "PostgreSQL did not start: $(tail -3 "$T/pg.log")"
psql_su() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$T" -p "$pgport" "$@"; }
psql_su -d postgres -c "CREATE DATABASE n8ntest" || fail_now "could not create the test database"
secret=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
psql_su -d n8ntest >/dev/null <<SQL || fail_now "could not set up idemgate and its roles"
CREATE EXTENSION idemgate;
CREATE ROLE n8n_client LOGIN PASSWORD '$secret';
CREATE ROLE n8n_approver LOGIN PASSWORD '$secret';
SELECT idemgate.grant_role('n8n_client', 'client');
SELECT idemgate.grant_role('n8n_approver', 'approver');
SELECT idemgate.grant_effect_type('n8n_client', 'n8n_http');
SQL

# The loopback sink: notifier (/notify), provider (/worker), chat (/alerts).
cc -O2 -o "$T/sink" "$root/test/sink/sink.c" || fail_now "could not build test/sink/sink.c"
"$T/sink" --port 0 --port-file "$T/sink.port" --log "$T/sink.jsonl" --max-seconds 900 --quiet &
pids+=($!)
for _ in $(seq 50); do [ -f "$T/sink.port" ] && break; sleep 0.1; done
[ -f "$T/sink.port" ] || fail_now "the sink did not start"
sink="http://127.0.0.1:$(cat "$T/sink.port")"

# n8n in a temp user folder, sqlite, loopback only.
n8nport=$(free_port)
brokerport=$(free_port)	# the task runners' broker (default 5679) must not collide either
export N8N_USER_FOLDER=$T/n8n DB_TYPE=sqlite N8N_ENCRYPTION_KEY=$secret \
  N8N_PORT=$n8nport N8N_LISTEN_ADDRESS=127.0.0.1 N8N_HOST=127.0.0.1 N8N_PROTOCOL=http \
  WEBHOOK_URL=http://127.0.0.1:$n8nport/ N8N_SECURE_COOKIE=false \
  N8N_DIAGNOSTICS_ENABLED=false N8N_VERSION_NOTIFICATIONS_ENABLED=false N8N_TEMPLATES_ENABLED=false \
  N8N_PERSONALIZATION_ENABLED=false N8N_HIRING_BANNER_ENABLED=false \
  N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false N8N_BLOCK_ENV_ACCESS_IN_NODE=false \
  N8N_LOG_LEVEL=warn N8N_RUNNERS_ENABLED=true N8N_RUNNERS_BROKER_PORT=$brokerport \
  IDEMGATE_APPROVAL_URL=http://127.0.0.1:$n8nport/webhook/idemgate/approval \
  IDEMGATE_NOTIFY_URL=$sink/notify IDEMGATE_WORKER_URL=$sink/worker IDEMGATE_ALERT_URL=$sink/alerts \
  IDEMGATE_APPROVER_HEADER=X-Auth-Request-Email IDEMGATE_CSRF_SECRET=$secret
mkdir -p "$N8N_USER_FOLDER"
cat >"$T/credentials.json" <<JSON
[
  {"id": "testClientCred01", "name": "idemgate client", "type": "postgres",
   "data": {"host": "127.0.0.1", "port": $pgport, "database": "n8ntest", "user": "n8n_client",
            "password": "$secret", "ssl": "disable", "maxConnections": 20}},
  {"id": "testApproverCred", "name": "idemgate approver", "type": "postgres",
   "data": {"host": "127.0.0.1", "port": $pgport, "database": "n8ntest", "user": "n8n_approver",
            "password": "$secret", "ssl": "disable", "maxConnections": 10}}
]
JSON
"$n8n" import:credentials --input="$T/credentials.json" >"$T/import.log" 2>&1 ||
  fail_now "n8n import:credentials failed: $(tail -5 "$T/import.log")"
"$n8n" import:workflow --separate --input="$root/examples/n8n-postgres-node" >>"$T/import.log" 2>&1 ||
  fail_now "n8n import:workflow failed: $(tail -5 "$T/import.log")"
# A test-only workflow whose work fails the way the intake raises it, with
# the shipped error workflow as its error workflow.
"$n8n" import:workflow --input="$root/test/n8n/failing-work.json" >>"$T/import.log" 2>&1 ||
  fail_now "n8n import:workflow (test workflow) failed: $(tail -5 "$T/import.log")"
for id in IdemgateIntake01 IdemgateApprReq1 IdemgateApprPage IdemgateWorker01 IdemgateAlerts01 IdemgateTestFail; do
  "$n8n" update:workflow --id="$id" --active=true >>"$T/import.log" 2>&1 ||
    fail_now "n8n update:workflow --id=$id --active=true failed: $(tail -5 "$T/import.log")"
done

"$n8n" start >"$T/n8n.log" 2>&1 &
pids+=($!)
n8npid=$!
up=
for _ in $(seq 600); do	# up to 5 minutes: a loaded 2-core machine starts n8n slowly
  kill -0 "$n8npid" 2>/dev/null || break
  if curl -sf "http://127.0.0.1:$n8nport/healthz" >/dev/null 2>&1 &&
     curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$n8nport/webhook/idemgate/intake" \
       -H 'content-type: application/json' -d '{"event_id":"n8n-warmup","ping":true}' | grep -q '^200$'; then
    up=1; break
  fi
  sleep 0.5
done
if [ -z "$up" ]; then
  kill -0 "$n8npid" 2>/dev/null && state="still starting after $(( $(date +%s) - started )) s" || state="exited"
  echo "# n8n log:"; tail -20 "$T/n8n.log" | sed 's/^/#   /'
  fail_now "n8n did not start serving the intake webhook ($state)"
fi
echo "# n8n $N8N_VERSION up after $(( $(date +%s) - started )) s"

if [ -n "${HOLD:-}" ]; then	# debugging: keep n8n up until interrupted
  echo "# holding: n8n http://127.0.0.1:$n8nport, psql -h $T -p $pgport n8ntest, sink log $T/sink.jsonl"
  wait "$n8npid"
fi
PGHOST=$T PGPORT=$pgport PGDATABASE=n8ntest PGUSER=postgres \
N8N_URL=http://127.0.0.1:$n8nport SINK_LOG=$T/sink.jsonl CHROMIUM=$chromium \
N8N_MODULES=$n8n_dir/node_modules PPTR_MODULES=$pptr_dir/node_modules \
  node "$root/test/n8n/drive.js" 2>&1 | tee "$T/drive.log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "# n8n log (errors):"; grep -iE 'error|warn' "$T/n8n.log" | tail -20 | sed 's/^/#   /'
fi
echo "# n8n suite took $(( $(date +%s) - started )) s"
exit "$rc"
