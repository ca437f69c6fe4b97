# shellcheck shell=bash
# test/n8n/harness.sh — what both n8n suites do around their driver, written
# once: sourced by test/n8n/run.sh (the shipped workflows,
# examples/n8n-postgres-node/) and test/n8n-nodes/run.sh (the community-node
# package n8n/ and its workflows, examples/n8n-idemgate-nodes/). As root,
# after `make install`.
#
# In the order a suite calls them:
#   n8n_preflight [chromium]     node (and Debian's chromium) present
#   n8n_install [puppeteer]      the pinned n8n (and puppeteer-core) from the
#                                npm registry into a cache directory,
#                                IDEMGATE_N8N_CACHE, reused by later runs
#   n8n_scratch NAME             a temp dir $T; everything started is stopped
#                                on exit
#   n8n_postgres OPTS SQL ROLE...
#                                a throwaway PostgreSQL with idemgate on a free
#                                loopback port, database n8ntest, a login role
#                                n8n_ROLE holding each bundle ROLE
#   n8n_sink WORKER_PATH         the loopback sink (test/sink): notifier
#                                (/notify), provider (WORKER_PATH), chat (/alerts)
#   n8n_environment PREFIX [NAME=VALUE...]
#                                n8n's environment: N8N_USER_FOLDER in $T,
#                                sqlite, 127.0.0.1; the workflows' IDEMGATE_*
#   n8n_import DIR TEST_JSON ERROR_ID ROLE:MAX...
#                                the credentials by the names the workflows use,
#                                DIR's workflows and a test-only one, all active
#                                but the error workflow
#   n8n_start PREFIX STATUS_RE WHAT
#                                n8n started, up once PREFIX/intake answers
#   n8n_drive DRIVER             the suite's drive.js, within the time limit
#   n8n_finish                   "N passed, M failed" last
# Each check is one "ok - ..." or "not ok - ..." line: ok NAME for a
# suite's own, count LOG for those a script it ran printed. If n8n cannot be
# installed or started, that is a failure with the reason (fail_now), never
# a skip. IDEMGATE_N8N_SECONDS (1200) limits a suite; KEEP=1 keeps $T,
# HOLD=1 keeps n8n up for a look. The suite sets root (the repository) before sourcing this file.
: "${root:?test/n8n/harness.sh: set root before sourcing it}"

N8N_VERSION=1.123.50          # pinned; see docs/n8n.md for why this patch release
PPTR_VERSION=23.9.0           # puppeteer-core, the last line supporting Node 20
CACHE=${IDEMGATE_N8N_CACHE:-/var/cache/idemgate-n8n}
n8n_dir=$CACHE/n8n-$N8N_VERSION
pptr_dir=$CACHE/puppeteer-core-$PPTR_VERSION
n8n=$n8n_dir/node_modules/.bin/n8n
suite=$(basename "$(dirname "$0")")
LIMIT=${IDEMGATE_N8N_SECONDS:-1200}	# a whole suite, n8n's first install excepted

passed=0
failed=0
started=$(date +%s)
ok() { passed=$((passed + 1)); echo "ok - $1"; }
fail_now() {	# fail_now REASON → the whole suite fails with the reason
  echo "not ok - $1"
  echo "$passed passed, $((failed + 1)) failed"
  exit 1
}
# count LOG → adds LOG's "ok - " and "not ok - " lines to the counts.
count() {
  passed=$((passed + $(grep -c '^ok - ' "$1")))
  failed=$((failed + $(grep -c '^not ok - ' "$1")))
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

n8n_preflight() {
  command -v node >/dev/null || fail_now "node is not installed (scripts/install-deps.sh installs it)"
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' ||
    fail_now "n8n $N8N_VERSION needs Node >= 20.19; this is $(node --version) (scripts/install-deps.sh installs 20.20.2 into /usr/local)"
  chromium=
  if [ "${1:-}" = chromium ]; then
    chromium=$(command -v chromium || true)
    [ -n "$chromium" ] || fail_now "Debian's chromium is not installed (scripts/install-deps.sh installs it)"
  fi
}

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

n8n_install() {
  mkdir -p "$CACHE"
  # A native module (n8n's sqlite3) whose prebuilt binary cannot be fetched is
  # compiled by node-gyp, which would download Node's headers; the official
  # builds (scripts/install-deps.sh installs one) and Debian's or NodeSource's
  # packages keep them next to the binary, so point node-gyp there.
  local node_prefix
  node_prefix=$(dirname "$(dirname "$(node -p process.execPath)")")
  [ -f "$node_prefix/include/node/common.gypi" ] && export npm_config_nodedir=$node_prefix
  # xlsx: n8n pins a tarball URL on a CDN this machine cannot reach; 0.18.5 is
  # the same library from the npm registry.
  install_cached "$n8n_dir" "{\"name\":\"idemgate-n8n\",\"private\":true,\"dependencies\":{\"n8n\":\"$N8N_VERSION\"},\"overrides\":{\"xlsx\":\"0.18.5\"}}" ||
    fail_now "could not install n8n $N8N_VERSION from the npm registry"
  if [ "${1:-}" = puppeteer ]; then
    install_cached "$pptr_dir" "{\"name\":\"idemgate-n8n-browser\",\"private\":true,\"dependencies\":{\"puppeteer-core\":\"$PPTR_VERSION\"}}" ||
      fail_now "could not install puppeteer-core $PPTR_VERSION from the npm registry"
  fi
  [ "$("$n8n" --version 2>/dev/null)" = "$N8N_VERSION" ] || fail_now "the cached n8n does not run: $("$n8n" --version 2>&1 | tail -1)"
  started=$(date +%s)	# the time limit counts from here
}

# Scratch space, readable by postgres for the cluster.
n8n_scratch() {
  T=$(mktemp -d "/tmp/idemgate-$1.XXXXXX")
  chmod 755 "$T"; chown postgres "$T"
  pids=()
  trap n8n_cleanup EXIT
  trap 'exit 1' INT TERM
}
n8n_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -f "$T/pg/postmaster.pid" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -m immediate stop >/dev/null 2>&1
  if [ -n "${KEEP:-}" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}

# n8n_postgres "SERVER OPTIONS" "SQL" ROLE... → PostgreSQL with idemgate
# (no preload: effects of type n8n_http are pulled by the workflows' effect
# worker; alerts are published by the test), and a login role n8n_ROLE
# holding idemgate's bundle ROLE for each ROLE; n8n_client may enqueue
# effects of type n8n_http. SQL runs after, as superuser.
n8n_postgres() {
  local opts=$1 sql=$2 role roles=; shift 2
  bindir=$(pg_config --bindir)
  pgport=$(free_port)
  mkdir -p "$T/pg" && chown postgres "$T/pg"
  runuser -u postgres -- "$bindir/initdb" -D "$T/pg" -A scram-sha-256 --auth-local=trust -U postgres >"$T/initdb.log" 2>&1 ||
    fail_now "initdb failed: $(tail -3 "$T/initdb.log")"
  runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -l "$T/pg.log" -w \
    -o "-p $pgport -k $T -c listen_addresses=127.0.0.1 -c max_connections=200 $opts" start >/dev/null ||
    fail_now "PostgreSQL did not start: $(tail -3 "$T/pg.log")"
  psql_su -d postgres -c "CREATE DATABASE n8ntest" || fail_now "could not create the test database"
  secret=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  for role in "$@"; do
    roles+="CREATE ROLE n8n_$role LOGIN PASSWORD '$secret';"$'\n'
    roles+="SELECT idemgate.grant_role('n8n_$role', '$role');"$'\n'
  done
  { printf 'CREATE EXTENSION idemgate;\n%s' "$roles"
    echo "SELECT idemgate.grant_effect_type('n8n_client', 'n8n_http');"
    printf '%s\n' "$sql"; } | psql_su -d n8ntest >/dev/null || fail_now "could not set up idemgate and its roles"
}
psql_su() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$T" -p "$pgport" "$@"; }

# n8n_sink WORKER_PATH → the loopback sink, up for the suite's time limit.
n8n_sink() {
  cc -O2 -o "$T/sink" "$root/test/sink/sink.c" || fail_now "could not build test/sink/sink.c"
  "$T/sink" --port 0 --port-file "$T/sink.port" --log "$T/sink.jsonl" --max-seconds "$LIMIT" --quiet &
  pids+=($!)
  for _ in $(seq 50); do [ -f "$T/sink.port" ] && break; sleep 0.1; done
  [ -f "$T/sink.port" ] || fail_now "the sink did not start"
  sink="http://127.0.0.1:$(cat "$T/sink.port")"
  worker_url=$sink$1
}

# n8n_environment PREFIX [NAME=VALUE...] → n8n in a temp user folder,
# sqlite, loopback only; the approval page under /webhook/PREFIX/approval.
n8n_environment() {
  local prefix=$1; shift
  n8nport=$(free_port)
  brokerport=$(free_port)	# the task runners' broker (default 5679) must not collide either
  export N8N_USER_FOLDER=$T/n8n DB_TYPE=sqlite N8N_ENCRYPTION_KEY=$secret \
    N8N_PORT=$n8nport N8N_LISTEN_ADDRESS=127.0.0.1 N8N_HOST=127.0.0.1 N8N_PROTOCOL=http \
    WEBHOOK_URL=http://127.0.0.1:$n8nport/ N8N_SECURE_COOKIE=false \
    N8N_DIAGNOSTICS_ENABLED=false N8N_VERSION_NOTIFICATIONS_ENABLED=false N8N_TEMPLATES_ENABLED=false \
    N8N_PERSONALIZATION_ENABLED=false N8N_HIRING_BANNER_ENABLED=false \
    N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false N8N_BLOCK_ENV_ACCESS_IN_NODE=false \
    N8N_LOG_LEVEL=warn N8N_RUNNERS_ENABLED=true N8N_RUNNERS_BROKER_PORT=$brokerport \
    IDEMGATE_APPROVAL_URL=http://127.0.0.1:$n8nport/webhook/$prefix/approval \
    IDEMGATE_NOTIFY_URL=$sink/notify IDEMGATE_WORKER_URL=$worker_url IDEMGATE_ALERT_URL=$sink/alerts \
    IDEMGATE_APPROVER_HEADER=X-Auth-Request-Email IDEMGATE_CSRF_SECRET=$secret
  # shellcheck disable=SC2163  # NAME=VALUE pairs, exported as given
  [ $# -eq 0 ] || export "$@"
  mkdir -p "$N8N_USER_FOLDER"
}

# n8n_import DIR TEST_JSON ERROR_ID ROLE:MAX... → credentials "idemgate ROLE"
# (type postgres, user n8n_ROLE, MAX connections) and the workflows of DIR
# and TEST_JSON imported with n8n's CLI; every one active but the error
# workflow ERROR_ID (an Error Trigger is not activated): two CLI calls, each
# of which starts n8n's whole CLI.
n8n_import() {
  local dir=$1 test_json=$2 error_id=$3 spec role max id sep=
  shift 3
  declare -A ids=([client]=testClientCred01 [approver]=testApproverCred [operator]=testOperatorCred)
  {
    echo "["
    for spec in "$@"; do
      role=${spec%%:*} max=${spec#*:} id=${ids[${spec%%:*}]}
      printf '%s  {"id": "%s", "name": "idemgate %s", "type": "postgres",\n' "$sep" "$id" "$role"
      printf '   "data": {"host": "127.0.0.1", "port": %s, "database": "n8ntest", "user": "n8n_%s",\n' "$pgport" "$role"
      printf '            "password": "%s", "ssl": "disable", "maxConnections": %s}}' "$secret" "$max"
      sep=$',\n'
    done
    printf '\n]\n'
  } >"$T/credentials.json"
  "$n8n" import:credentials --input="$T/credentials.json" >"$T/import.log" 2>&1 ||
    fail_now "n8n import:credentials failed: $(tail -5 "$T/import.log")"
  "$n8n" import:workflow --separate --input="$root/$dir" >>"$T/import.log" 2>&1 ||
    fail_now "n8n import:workflow failed: $(tail -5 "$T/import.log")"
  "$n8n" import:workflow --input="$root/$test_json" >>"$T/import.log" 2>&1 ||
    fail_now "n8n import:workflow (test workflow) failed: $(tail -5 "$T/import.log")"
  "$n8n" update:workflow --all --active=true >>"$T/import.log" 2>&1 &&
    "$n8n" update:workflow --id="$error_id" --active=false >>"$T/import.log" 2>&1 ||
    fail_now "n8n update:workflow (activation) failed: $(tail -5 "$T/import.log")"
  ok "n8n: credentials and the $(ls "$root/$dir"/*.json | wc -l) workflows of $dir imported and activated"
  echo "# imported after $(( $(date +%s) - started )) s"
}

# n8n_start PREFIX STATUS_RE WHAT → n8n started; up once a warm-up event
# to /webhook/PREFIX/intake is answered with a status matching STATUS_RE.
n8n_start() {
  local prefix=$1 status=$2 what=$3 up='' state
  "$n8n" start >"$T/n8n.log" 2>&1 &
  pids+=($!)
  n8npid=$!
  for _ in $(seq 600); do	# up to 5 minutes: a loaded 2-core machine starts n8n slowly
    kill -0 "$n8npid" 2>/dev/null || break
    if curl -sf "http://127.0.0.1:$n8nport/healthz" >/dev/null 2>&1 &&
       curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$n8nport/webhook/$prefix/intake" \
         -H 'content-type: application/json' -d "{\"event_id\":\"$prefix-warmup\",\"ping\":true}" | grep -qE "$status"; then
      up=1; break
    fi
    sleep 0.5
  done
  if [ -z "$up" ]; then
    kill -0 "$n8npid" 2>/dev/null && state="still starting after $(( $(date +%s) - started )) s" || state="exited"
    echo "# n8n log:"; tail -30 "$T/n8n.log" | sed 's/^/#   /'
    fail_now "n8n did not start serving the intake webhook $what ($state)"
  fi
  ok "n8n $N8N_VERSION serves the intake $what after $(( $(date +%s) - started )) s"
  if [ -n "${HOLD:-}" ]; then	# debugging: keep n8n up until interrupted
    echo "# holding: n8n http://127.0.0.1:$n8nport, psql -h $T -p $pgport n8ntest, sink log $T/sink.jsonl"
    wait "$n8npid"
  fi
}

# n8n_drive DRIVER → runs the suite's drive.js (test/n8n/lib.js says what it
# is given) within what is left of the time limit, and counts its checks.
n8n_drive() {
  local left rc
  left=$(( LIMIT - ($(date +%s) - started) ))
  [ "$left" -gt 60 ] || left=60
  PGHOST=$T PGPORT=$pgport PGDATABASE=n8ntest PGUSER=postgres PG_LOG=$T/pg.log \
  N8N_URL=http://127.0.0.1:$n8nport SINK_LOG=$T/sink.jsonl CSRF_SECRET=$secret \
  N8N_MODULES=$n8n_dir/node_modules PPTR_MODULES=$pptr_dir/node_modules CHROMIUM=$chromium \
    timeout -k 10 "$left" node "$root/$1" 2>&1 | tee "$T/drive.log"
  rc=${PIPESTATUS[0]}
  count "$T/drive.log"
  if ! grep -qx '# driver finished' "$T/drive.log"; then
    echo "not ok - the driver finished within the suite's limit of $LIMIT s (exit $rc)"
    failed=$((failed + 1))
  fi
}

n8n_finish() {
  if [ "$failed" -ne 0 ]; then
    echo "# n8n log (errors):"; grep -iE 'error|warn' "$T/n8n.log" | tail -20 | sed 's/^/#   /'
  fi
  echo "# $suite suite took $(( $(date +%s) - started )) s"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
