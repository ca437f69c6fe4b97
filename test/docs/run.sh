#!/usr/bin/env bash
# test/docs/run.sh — the runnable blocks of README.md and docs/*.md, run
# against a fresh cluster, so the documented steps cannot drift from what
# the extension does. Then examples/alerts_listener.sh
# (test/docs/listener_test.sh).
#
# A block is runnable when the line before its fence is <!-- runnable -->
# (options: test/docs/extract.py). Mark the blocks a newcomer runs as they
# stand: install, first calls, the operations drills, outbox, n8n's SQL.
# Blocks that need Citus, Prometheus, a package build or a service stay
# unmarked.
#
# As root, after make install: initdb as postgres in a temp dir, port 55532
# or the next free one (DOCS_TEST_PORT to choose), the server as the README
# says (shared_preload_libraries = 'idemgate', idemgate.database = 'app').
# Each file starts with a database app of its own: dropped, and created
# with CREATE EXTENSION idemgate unless the file's first runnable block
# runs in postgres (db=postgres: README's Install step 3 creates it); and
# with the roles the docs grant bundles to (below) made afresh, except those
# the file creates itself. Blocks run in document order: SQL with psql as
# the postgres superuser (ON_ERROR_STOP; any ERROR fails the block), shell
# with bash -e as root in the repository root with PGHOST, PGPORT, PGUSER
# and PGDATABASE set to the cluster's app. Each block has 60 s, the whole
# run DOCS_TEST_SECONDS (600). Prints "ok - file:line" or "not ok -
# file:line" per block, the listener test's lines, and "N passed, M failed"
# last; exits non-zero on any failure. Stops its cluster and removes its
# files on exit (KEEP=1 keeps them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(pg_config --bindir)
LIMIT=${DOCS_TEST_SECONDS:-600}
# Roles are the docs' own: they persist from one file to the next, as in a
# reader's cluster, and the docs must create every role they grant a
# bundle to (grant_role does not).

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
started=$SECONDS

[ "$(id -u)" -eq 0 ] || { not_ok "run as root (the cluster runs as postgres)"; finish; }
port=${DOCS_TEST_PORT:-}
if [ -z "$port" ]; then
  for p in $(seq 55532 55599); do
    python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', $p))" 2>/dev/null &&
      [ ! -e "/tmp/.s.PGSQL.$p" ] && { port=$p; break; }
  done
fi
[ -n "$port" ] || { not_ok "no free port from 55532"; finish; }

T=$(mktemp -d /tmp/idemgate-docs.XXXXXX)
chmod 755 "$T"; chown postgres "$T"
cleanup() {
  [ -f "$T/pg/postmaster.pid" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -m immediate stop >/dev/null 2>&1
  if [ -n "${KEEP:-}" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

runuser -u postgres -- "$bindir/initdb" -D "$T/pg" -U postgres -A trust >"$T/initdb.log" 2>&1 ||
  { not_ok "initdb: $(tail -1 "$T/initdb.log")"; finish; }
cat >>"$T/pg/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$T'
shared_preload_libraries = 'idemgate'
idemgate.database = 'app'
EOF
runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -l "$T/pg.log" -w start >/dev/null ||
  { not_ok "the server starts: $(tail -3 "$T/pg.log")"; finish; }
export PGHOST=$T PGPORT=$port
psql_su() { runuser -u postgres -- env PGHOST="$T" PGPORT="$port" psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# fresh_start FILE FIRST-DB → the database app, fresh for FILE
fresh_start() {
  local file=$1 first_db=$2
  psql_su -d postgres -c 'DROP DATABASE IF EXISTS app WITH (FORCE)' -c 'DROP DATABASE IF EXISTS docs_scratch WITH (FORCE)' || return 1
  [ "$first_db" = postgres ] && return 0
  psql_su -d postgres -c 'CREATE DATABASE app' && psql_su -d app -c 'CREATE EXTENSION idemgate'
}

files=("$root/README.md" "$root"/docs/*.md)
mkdir -p "$T/blocks"
for f in "${files[@]}"; do
  rel=${f#"$root"/}
  dir=$T/blocks/$(basename "$f")
  mkdir -p "$dir"
  if ! python3 "$root/test/docs/extract.py" "$f" "$dir" >"$dir/index"; then
    not_ok "$rel: its runnable markers"; continue
  fi
  [ -s "$dir/index" ] || continue
  first_db=$(head -1 "$dir/index" | grep -o 'db=[a-z_]*' | cut -d= -f2)
  if ! fresh_start "$f" "${first_db:-app}" >"$dir/setup.log" 2>&1; then
    not_ok "$rel: a fresh database app for the file"; sed 's/^/#   /' "$dir/setup.log"; continue
  fi
  while read -r name line lang opts; do
    where="$rel:$line"
    if [ $((SECONDS - started)) -ge "$LIMIT" ]; then not_ok "$where (the run's $LIMIT s are over)"; continue; fi
    db=app
    case $opts in *db=postgres*) db=postgres ;; *db=scratch*) db=docs_scratch ;; esac
    if [ "$db" = docs_scratch ]; then
      psql_su -d postgres -c 'DROP DATABASE IF EXISTS docs_scratch WITH (FORCE)' -c 'CREATE DATABASE docs_scratch' >/dev/null 2>&1
    fi
    out=$dir/$name.out
    if [ "$lang" = sql ]; then
      chmod 644 "$dir/$name.sql"
      timeout -k 5 60 runuser -u postgres -- env PGHOST="$T" PGPORT="$port" \
        psql -X -v ON_ERROR_STOP=1 -d "$db" -f "$dir/$name.sql" >"$out" 2>&1
    else
      (cd "$root" && PGUSER=postgres PGDATABASE=$db timeout -k 5 60 bash -e "$dir/$name.sh") >"$out" 2>&1
    fi
    rc=$?
    if [ "$rc" -eq 0 ] && ! grep -qE '^(psql:[^ ]* )?(ERROR|FATAL|PANIC):|: ERROR: ' "$out"; then
      ok "$where"
    else
      not_ok "$where (exit $rc)"
      grep -E 'ERROR|FATAL|error' "$out" | head -5 | sed 's/^/#   /'
      [ "$rc" -eq 124 ] && echo "#   timed out after 60 s"
    fi
  done <"$dir/index"
done
runuser -u postgres -- "$bindir/pg_ctl" -D "$T/pg" -m fast -w stop >/dev/null 2>&1

# examples/alerts_listener.sh, on a cluster of its own.
bash "$root/test/docs/listener_test.sh" >"$T/listener.log" 2>&1
grep -E '^(not )?ok - |^#' "$T/listener.log"
passed=$((passed + $(grep -c '^ok - ' "$T/listener.log")))
failed=$((failed + $(grep -c '^not ok - ' "$T/listener.log")))
grep -qE '^[0-9]+ passed, [0-9]+ failed$' "$T/listener.log" || not_ok "test/docs/listener_test.sh finished"
echo "# docs test took $((SECONDS - started)) s"
finish
