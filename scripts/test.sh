#!/usr/bin/env bash
# scripts/test.sh — the whole idemgate test suite, as root on Debian 12.
#
# Installs what it needs (scripts/install-deps.sh, Node.js included), builds
# with -Werror, installs the extension, then runs, each suite against its own
# temp instance (README.md, "Quick start", lists them):
#   as the postgres user, with shared_preload_libraries = 'idemgate':
#   pg_regress (test/sql), isolation specs (test/specs), TAP (test/t), the
#   first two again with assertions, contrib/prometheus with Debian's
#   prometheus-postgres-exporter and promtool (test/prometheus);
#   as root: the HTTP sink self-test (test/sink), 3 minutes of the soak
#   with random faults (bench/soak), idemgate on Citus (test/citus), the
#   Debian package
#   (test/package), the shipped n8n workflows in a real n8n (test/n8n) and
#   the n8n community-node package with its workflows (test/n8n-nodes).
# Prints "N passed, M failed" last and exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh || exit 1

make -s clean >/dev/null 2>&1
if ! make -s || ! make -s install; then
  echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi

# Tests run as postgres in a scratch copy, so the checkout keeps its owner.
work=$(mktemp -d /tmp/idemgate-test.XXXXXX)
cp -a "$root/." "$work/tree"
chown -R postgres "$work"
logs="$root/test-results"
rm -rf "$logs"; mkdir -p "$logs"

passed=0; failed=0
count_regress() {	# count_regress LOG → adds pg_regress/isolation results
  local ok bad
  ok=$(grep -cE '\.\.\. ok|\.\.\. +ok' "$1")
  bad=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$1")
  passed=$((passed + ok)); failed=$((failed + bad))
  [ "$ok" -gt 0 ] || [ "$bad" -gt 0 ] || failed=$((failed + 1))	# ran nothing: a failure
}
suite() {	# suite NAME COMMAND... → runs as postgres, logs to test-results/NAME.log
  local name=$1; shift
  echo "== $name"
  runuser -u postgres -- env -C "$work/tree" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  cat "$logs/$name.log" | grep -E '^(test |     |ok |not ok|t\/|test\/t\/|\[[0-9:]+\] test\/t\/|Files=|Result:|#   Failed)' || true
  return $rc
}

suite regress make -s regresscheck; count_regress "$logs/regress.log"
[ -f "$work/tree/regression.diffs" ] && cp "$work/tree/regression.diffs" "$logs/regress.diffs"
rm -f "$work/tree/regression.diffs"
suite isolation make -s isolationcheck; count_regress "$logs/isolation.log"
[ -f "$work/tree/output_iso/regression.diffs" ] && cp "$work/tree/output_iso/regression.diffs" "$logs/isolation.diffs"

if ls test/t/*.pl >/dev/null 2>&1; then
  suite tap make -s tapcheck PROVE_FLAGS=--timer
  tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$logs/tap.log" | tail -1)
  bad=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$logs/tap.log" | awk '{ split($2, a, "/"); s += a[1] } END { print s + 0 }')
  dubious=$(grep -cE 'Dubious|No subtests run|Parse errors' "$logs/tap.log")
  tests=${tests:-0}
  passed=$((passed + tests - bad)); failed=$((failed + bad + dubious))
  [ "$tests" -gt 0 ] || failed=$((failed + 1))
  cp -r "$work/tree/tmp_check/log" "$logs/tap-server-logs" 2>/dev/null || true
fi

# Again with assertions compiled into our code (STYLE: test also with
# -DUSE_ASSERT_CHECKING): pg_regress and isolation, which exercise every
# function. The normal build is installed back afterwards.
echo "== assert build"
if (cd "$work/tree" && make -s clean >/dev/null && make -s PG_CFLAGS=-DUSE_ASSERT_CHECKING &&
    make -s install PG_CFLAGS=-DUSE_ASSERT_CHECKING) >"$logs/assert-build.log" 2>&1; then
  chown -R postgres "$work"
  rm -f "$work/tree/regression.diffs" "$work/tree/output_iso/regression.diffs"
  suite regress-assert make -s regresscheck; count_regress "$logs/regress-assert.log"
  [ -f "$work/tree/regression.diffs" ] && cp "$work/tree/regression.diffs" "$logs/regress-assert.diffs"
  suite isolation-assert make -s isolationcheck; count_regress "$logs/isolation-assert.log"
  [ -f "$work/tree/output_iso/regression.diffs" ] && cp "$work/tree/output_iso/regression.diffs" "$logs/isolation-assert.diffs"
else
  echo "assert build failed"; failed=$((failed + 1))
fi
make -s install >/dev/null

if [ -f test/sink/selftest.sh ]; then
  echo "== sink"
  bash test/sink/selftest.sh >"$logs/sink.log" 2>&1
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/sink.log" | tail -1)
  echo "${line:-sink self-test printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
fi

# The soak (bench/soak/run.sh): 3 minutes of claims, approvals and
# deliveries to the sink with random faults (dispatcher and postmaster
# kills, kill switch, pauses, purge, reinject, cancels); its own count:
# failing is an effect lost, a duplicate to a non-idempotent endpoint, or
# a crash it could not recover from.
if [ -f bench/soak/run.sh ]; then
  echo "== soak"
  bash bench/soak/run.sh --minutes 3 >"$logs/soak.log" 2>&1
  grep -E '^(ok|not ok) - |^soak: ' "$logs/soak.log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/soak.log" | tail -1)
  echo "${line:-soak printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
fi

# idemgate on Citus (test/citus/run.sh, as root): a coordinator and two
# workers on this machine; Citus is built from its source tarball when not
# installed, or the suite says in one line why it was skipped.
if [ -f test/citus/run.sh ]; then
  echo "== citus"
  bash test/citus/run.sh >"$logs/citus.log" 2>&1
  grep -E '^(not ok|citus: skipped)' "$logs/citus.log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/citus.log" | tail -1)
  echo "${line:-citus suite printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
fi

# contrib/prometheus with the real tools (exporter, promtool), its own count.
if [ -f test/prometheus/run.sh ]; then
  echo "== prometheus"
  runuser -u postgres -- env -C "$work/tree" bash test/prometheus/run.sh >"$logs/prometheus.log" 2>&1
  grep -E '^(ok|not ok) - ' "$logs/prometheus.log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/prometheus.log" | tail -1)
  echo "${line:-prometheus suite printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
fi

# The Debian package (test/package/run.sh, as root: it builds, installs and
# removes postgresql-15-idemgate, then puts make install's files back).
if [ -f test/package/run.sh ]; then
  echo "== package"
  bash test/package/run.sh >"$logs/package.log" 2>&1
  grep -E '^(ok|not ok) - ' "$logs/package.log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/package.log" | tail -1)
  echo "${line:-package suite printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
fi

# The shipped n8n workflows in a real n8n (installed from npm into a cache
# directory on first use), driven on loopback; see test/n8n/run.sh.
echo "== n8n"
bash test/n8n/run.sh >"$logs/n8n.log" 2>&1
grep -E '^(not ok|# )' "$logs/n8n.log" || true
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/n8n.log" | tail -1)
echo "${line:-n8n suite printed no summary}"
if [ -n "$line" ]; then
  passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
  failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
else
  failed=$((failed + 1))
fi

# The n8n community-node package (n8n/): built, unit-tested, linted and
# packed, installed into the same cached n8n, and the workflows built from
# its nodes (examples/n8n-nodes/) driven on loopback; see test/n8n-nodes/run.sh.
echo "== n8n-nodes"
bash test/n8n-nodes/run.sh >"$logs/n8n-nodes.log" 2>&1
grep -E '^(not ok|# )' "$logs/n8n-nodes.log" || true
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/n8n-nodes.log" | tail -1)
echo "${line:-n8n-nodes suite printed no summary}"
if [ -n "$line" ]; then
  passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
  failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
else
  failed=$((failed + 1))
fi

for f in "$logs"/*.diffs; do [ -f "$f" ] && { echo "--- $f"; head -c 20000 "$f"; }; done
rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
