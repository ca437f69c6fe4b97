#!/usr/bin/env bash
# test/n8n-nodes/run.sh — the n8n community-node package (n8n/) in a real
# n8n, driving the workflows built from its nodes (examples/n8n-idemgate-nodes/) on
# loopback. As root, after `make install` (scripts/test.sh runs it as its
# own suite).
#
# What it does: builds the package as n8n/README.md says (npm ci, npm run
# pack, in a clean copy of n8n/: test/n8n-nodes/pack.sh, which also checks
# the tarball), runs its unit tests and lint; installs the tarball into
# n8n's ~/.n8n/nodes with a plain `npm install <tarball>`; uses the n8n release
# test/n8n/run.sh caches (installing it the same way if it is missing);
# starts a throwaway PostgreSQL with idemgate on a free loopback port, the
# loopback sink (test/sink) as notifier, provider and chat, and n8n on
# 127.0.0.1 with N8N_USER_FOLDER in a temp dir; imports three credentials
# (client, approver, operator) and the workflows with n8n's CLI, activates
# them, then runs test/n8n-nodes/drive.js. Everything it started is stopped
# on exit. Prints "N passed, M failed" last. If anything cannot be built,
# installed or started, that is a failure with the reason, never a skip.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

N8N_VERSION=1.123.50          # the release test/n8n/run.sh pins (docs/n8n.md says why)
CACHE=${IDEMGATE_N8N_CACHE:-/var/cache/idemgate-n8n}
n8n_dir=$CACHE/n8n-$N8N_VERSION
LIMIT=${IDEMGATE_N8N_NODES_SECONDS:-1200}	# the whole suite, n8n's first install excepted

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
fail_now() {	# fail_now REASON → the whole suite fails with the reason
  echo "not ok - $1"
  echo "$passed passed, $((failed + 1)) failed"
  exit 1
}

started=$(date +%s)
command -v node >/dev/null || fail_now "node is not installed (scripts/install-deps.sh installs it)"
node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' ||
  fail_now "n8n $N8N_VERSION needs Node >= 20.19; this is $(node --version)"

# install_cached DIR PACKAGE-JSON → npm install into DIR unless already done
# (the same cache and layout as test/n8n/run.sh).
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
install_cached "$n8n_dir" "{\"name\":\"idemgate-n8n\",\"private\":true,\"dependencies\":{\"n8n\":\"$N8N_VERSION\"},\"overrides\":{\"xlsx\":\"0.18.5\"}}" ||
  fail_now "could not install n8n $N8N_VERSION from the npm registry"
n8n=$n8n_dir/node_modules/.bin/n8n
[ "$("$n8n" --version 2>/dev/null)" = "$N8N_VERSION" ] || fail_now "the cached n8n does not run: $("$n8n" --version 2>&1 | tail -1)"
started=$(date +%s)	# the time limit counts from here

# Scratch space, readable by postgres for the cluster.
T=$(mktemp -d /tmp/idemgate-n8n-nodes.XXXXXX)
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

# The package, built as n8n/README.md says from a clean copy of n8n/
# (test/n8n-nodes/pack.sh: npm ci, npm run pack, the tarball's contents and
# peer dependency), then its unit tests and n8n's community-node lint there.
bash "$root/test/n8n-nodes/pack.sh" "$T/pack" >"$T/pack.log" 2>&1
sed -n '/^\(not \)\?ok - /p; /^#/p' "$T/pack.log"
passed=$((passed + $(grep -c '^ok - ' "$T/pack.log")))
failed=$((failed + $(grep -c '^not ok - ' "$T/pack.log")))
tgz=$(ls "$T"/pack/n8n-nodes-idemgate-*.tgz 2>/dev/null | head -1)
[ -n "$tgz" ] || fail_now "package: test/n8n-nodes/pack.sh made no tarball"
step() {	# step NAME COMMAND... → runs in the package copy, fails the suite with the log's tail
  local name=$1; shift
  if (cd "$T/pack/pkg" && "$@") >"$T/pkg-$name.log" 2>&1; then
    ok "package: $name"
  else
    echo "# $name:"; tail -25 "$T/pkg-$name.log" | sed 's/^/#   /'
    fail_now "package: $name failed"
  fi
}
step "unit tests (node --test)" npm test
step "lint (eslint-plugin-n8n-nodes-base)" npm run lint
echo "# package built after $(( $(date +%s) - started )) s"

# PostgreSQL with idemgate (no preload: effects of type n8n_http are pulled
# by the effect worker's trigger; alerts are published by the test). The
# server logs every error with its statement (log_min_error_statement), as
# a production server does: the test greps that log for approval tokens.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
bindir=$(pg_config --bindir)
pgport=$(free_port)
mkdir -p "$T/pg" && chown postgres "$T/pg"
runuser -u postgres -- "$bindir/initdb" -D "$T/pg" -A scram-sha-256 --auth-local=trust -U postgres >"$T/initdb.log" 2>&1 ||
  fail_now "initdb failed: $(tail -3 "$T/initdb.log")"
runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -l "$T/pg.log" -w \
  -o "-p $pgport -k $T -c listen_addresses=127.0.0.1 -c max_connections=200 -c log_min_error_statement=error -c log_min_messages=warning" \
  start >/dev/null || fail_now "PostgreSQL did not start: $(tail -3 "$T/pg.log")"
psql_su() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$T" -p "$pgport" "$@"; }
psql_su -d postgres -c "CREATE DATABASE n8ntest" || fail_now "could not create the test database"
secret=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
psql_su -d n8ntest >/dev/null <<SQL || fail_now "could not set up idemgate and its roles"
CREATE EXTENSION idemgate;
CREATE ROLE n8n_client LOGIN PASSWORD '$secret';
CREATE ROLE n8n_approver LOGIN PASSWORD '$secret';
CREATE ROLE n8n_operator LOGIN PASSWORD '$secret';
SELECT idemgate.grant_role('n8n_client', 'client');
SELECT idemgate.grant_role('n8n_approver', 'approver');
SELECT idemgate.grant_role('n8n_operator', 'operator');
SELECT idemgate.grant_effect_type('n8n_client', 'n8n_http');
-- idemgate 1.2's grant_role makes the approver role quiet (no statement
-- text, terse errors in the server log). Undone here, as on a 1.1 server or
-- one whose DBA changed it: the node must keep tokens out of the log itself.
ALTER ROLE n8n_approver RESET ALL;
SQL

# The loopback sink: notifier (/notify), provider (/seq/503,200: every
# effect's first attempt gets 503 with Retry-After 1, its second 200), chat
# (/alerts).
cc -O2 -o "$T/sink" "$root/test/sink/sink.c" || fail_now "could not build test/sink/sink.c"
"$T/sink" --port 0 --port-file "$T/sink.port" --log "$T/sink.jsonl" --max-seconds "$LIMIT" --quiet &
pids+=($!)
for _ in $(seq 50); do [ -f "$T/sink.port" ] && break; sleep 0.1; done
[ -f "$T/sink.port" ] || fail_now "the sink did not start"
sink="http://127.0.0.1:$(cat "$T/sink.port")"

# n8n in a temp user folder, sqlite, loopback only; the package installed
# into its community-nodes folder (~/.n8n/nodes) as n8n's manual-install
# docs and n8n/README.md say: a plain `npm install <tarball>` there.
n8nport=$(free_port)
brokerport=$(free_port)	# the task runners' broker (default 5679) must not collide either
export N8N_USER_FOLDER=$T/n8n DB_TYPE=sqlite N8N_ENCRYPTION_KEY=$secret \
  N8N_PORT=$n8nport N8N_LISTEN_ADDRESS=127.0.0.1 N8N_HOST=127.0.0.1 N8N_PROTOCOL=http \
  WEBHOOK_URL=http://127.0.0.1:$n8nport/ N8N_SECURE_COOKIE=false \
  N8N_DIAGNOSTICS_ENABLED=false N8N_VERSION_NOTIFICATIONS_ENABLED=false N8N_TEMPLATES_ENABLED=false \
  N8N_PERSONALIZATION_ENABLED=false N8N_HIRING_BANNER_ENABLED=false \
  N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false N8N_BLOCK_ENV_ACCESS_IN_NODE=false \
  N8N_LOG_LEVEL=warn N8N_RUNNERS_ENABLED=true N8N_RUNNERS_BROKER_PORT=$brokerport \
  N8N_COMMUNITY_PACKAGES_ENABLED=true N8N_REINSTALL_MISSING_PACKAGES=false \
  IDEMGATE_APPROVAL_URL=http://127.0.0.1:$n8nport/webhook/idemgate-nodes/approval \
  IDEMGATE_NOTIFY_URL=$sink/notify IDEMGATE_WORKER_URL="$sink/seq/503,200?retry_after=1" IDEMGATE_ALERT_URL=$sink/alerts \
  IDEMGATE_APPROVER_HEADER=X-Auth-Request-Email IDEMGATE_CSRF_SECRET=$secret
nodes_dir=$N8N_USER_FOLDER/.n8n/nodes
mkdir -p "$nodes_dir"
printf '{"name":"installed-nodes","private":true}\n' >"$nodes_dir/package.json"
# No flags: the peer dependency n8n-workflow is optional, so npm installs no
# second copy (n8n's own is used) and never fetches the newest one.
if (cd "$nodes_dir" && npm install "$tgz") >"$T/nodes-install.log" 2>&1 &&
   [ -f "$nodes_dir/node_modules/n8n-nodes-idemgate/dist/nodes/Idemgate/Idemgate.node.js" ] &&
   [ -d "$nodes_dir/node_modules/pg" ] && [ ! -e "$nodes_dir/node_modules/n8n-workflow" ]; then
  ok "package: a plain npm install of the tarball in ~/.n8n/nodes installs it with pg and no n8n-workflow ($(ls "$nodes_dir/node_modules" | wc -l) packages)"
else
  tail -20 "$T/nodes-install.log" | sed 's/^/#   /'
  fail_now "package: npm install of the tarball into ~/.n8n/nodes failed"
fi

cat >"$T/credentials.json" <<JSON
[
  {"id": "testClientCred01", "name": "idemgate client", "type": "postgres",
   "data": {"host": "127.0.0.1", "port": $pgport, "database": "n8ntest", "user": "n8n_client",
            "password": "$secret", "ssl": "disable", "maxConnections": 40}},
  {"id": "testApproverCred", "name": "idemgate approver", "type": "postgres",
   "data": {"host": "127.0.0.1", "port": $pgport, "database": "n8ntest", "user": "n8n_approver",
            "password": "$secret", "ssl": "disable", "maxConnections": 20}},
  {"id": "testOperatorCred", "name": "idemgate operator", "type": "postgres",
   "data": {"host": "127.0.0.1", "port": $pgport, "database": "n8ntest", "user": "n8n_operator",
            "password": "$secret", "ssl": "disable", "maxConnections": 5}}
]
JSON
"$n8n" import:credentials --input="$T/credentials.json" >"$T/import.log" 2>&1 ||
  fail_now "n8n import:credentials failed: $(tail -5 "$T/import.log")"
"$n8n" import:workflow --separate --input="$root/examples/n8n-idemgate-nodes" >>"$T/import.log" 2>&1 ||
  fail_now "n8n import:workflow failed: $(tail -5 "$T/import.log")"
# A test-only workflow whose work fails without recording it, with the
# shipped error workflow as its error workflow.
"$n8n" import:workflow --input="$root/test/n8n-nodes/failing-work.json" >>"$T/import.log" 2>&1 ||
  fail_now "n8n import:workflow (test workflow) failed: $(tail -5 "$T/import.log")"
# Every workflow active but the error workflow (an Error Trigger is not
# activated); two CLI calls, each of which starts n8n's whole CLI.
"$n8n" update:workflow --all --active=true >>"$T/import.log" 2>&1 &&
  "$n8n" update:workflow --id=IdgNodeErrors001 --active=false >>"$T/import.log" 2>&1 ||
  fail_now "n8n update:workflow (activation) failed: $(tail -5 "$T/import.log")"
ok "n8n: credentials and the 7 workflows of examples/n8n-idemgate-nodes imported and activated"
echo "# imported after $(( $(date +%s) - started )) s"

"$n8n" start >"$T/n8n.log" 2>&1 &
pids+=($!)
n8npid=$!
up=
for _ in $(seq 600); do	# up to 5 minutes: a loaded 2-core machine starts n8n slowly
  kill -0 "$n8npid" 2>/dev/null || break
  if curl -sf "http://127.0.0.1:$n8nport/healthz" >/dev/null 2>&1 &&
     curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$n8nport/webhook/idemgate-nodes/intake" \
       -H 'content-type: application/json' -d '{"event_id":"n8n-nodes-warmup","ping":true}' | grep -qE '^20[02]$'; then
    up=1; break
  fi
  sleep 0.5
done
if [ -z "$up" ]; then
  kill -0 "$n8npid" 2>/dev/null && state="still starting after $(( $(date +%s) - started )) s" || state="exited"
  echo "# n8n log:"; tail -30 "$T/n8n.log" | sed 's/^/#   /'
  fail_now "n8n did not start serving the intake webhook built from the idemgate node ($state)"
fi
ok "n8n $N8N_VERSION loaded the package and serves the intake after $(( $(date +%s) - started )) s"

if [ -n "${HOLD:-}" ]; then	# debugging: keep n8n up until interrupted
  echo "# holding: n8n http://127.0.0.1:$n8nport, psql -h $T -p $pgport n8ntest, sink log $T/sink.jsonl"
  wait "$n8npid"
fi
left=$(( LIMIT - ($(date +%s) - started) ))
[ "$left" -gt 60 ] || left=60
PGHOST=$T PGPORT=$pgport PGDATABASE=n8ntest PGUSER=postgres PG_LOG=$T/pg.log \
N8N_URL=http://127.0.0.1:$n8nport SINK_LOG=$T/sink.jsonl CSRF_SECRET=$secret \
N8N_MODULES=$n8n_dir/node_modules \
  timeout -k 10 "$left" node "$root/test/n8n-nodes/drive.js" 2>&1 | tee "$T/drive.log"
rc=${PIPESTATUS[0]}
passed=$((passed + $(grep -c '^ok - ' "$T/drive.log")))
failed=$((failed + $(grep -c '^not ok - ' "$T/drive.log")))
if ! grep -qx '# driver finished' "$T/drive.log"; then
  echo "not ok - the driver finished within the suite's limit of $LIMIT s (exit $rc)"
  failed=$((failed + 1))
fi
if [ "$failed" -ne 0 ]; then
  echo "# n8n log (errors):"; grep -iE 'error|warn' "$T/n8n.log" | tail -20 | sed 's/^/#   /'
fi
echo "# n8n-nodes suite took $(( $(date +%s) - started )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
