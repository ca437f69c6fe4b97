#!/usr/bin/env bash
# scripts/test.sh — the whole idemgate test suite, as root on Debian 12.
#
# Installs what it needs (scripts/install-deps.sh, Node.js included), builds
# with -Werror, installs the extension, then runs, each suite against its own
# temp instance (README.md, "Quick start", lists them):
#   as the postgres user, with shared_preload_libraries = 'idemgate':
#   pg_regress (test/sql), isolation specs (test/specs), TAP (test/t), the
#   first two again with assertions, monitoring/prometheus with Debian's
#   prometheus-postgres-exporter and promtool (test/prometheus);
#   as root: the HTTP sink self-test (test/sink), 3 minutes of the soak
#   with random faults (bench/soak), idemgate on Citus 13 (test/citus);
#   then PostgreSQL 18 (scripts/pg18.sh builds and caches it): pg_regress,
#   isolation, TAP and Citus 14 again on it; then, on 15 only, the Debian
#   package (test/package), the runnable blocks of the docs (test/docs),
#   the shipped n8n workflows in a real n8n
#   (test/n8n) and the n8n community-node package with its workflows
#   (test/n8n-nodes).
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
  # 15 prints "test x ... ok"; 16 and later "ok 1 - x" / "not ok 2 - x".
  ok=$(grep -cE '\.\.\. ok|\.\.\. +ok|^ok [0-9]+ ' "$1")
  bad=$(grep -cE '\.\.\. FAILED|\.\.\. failed|^not ok [0-9]+ ' "$1")
  passed=$((passed + ok)); failed=$((failed + bad))
  [ "$ok" -gt 0 ] || [ "$bad" -gt 0 ] || failed=$((failed + 1))	# ran nothing: a failure
}
suite() {	# suite NAME COMMAND... → runs as postgres in $tree, logs to test-results/NAME.log
  local name=$1; shift
  echo "== $name"
  runuser -u postgres -- env -C "$tree" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  cat "$logs/$name.log" | grep -E '^(test |     |ok |not ok|t\/|test\/t\/|\[[0-9:]+\] test\/t\/|Files=|Result:|#   Failed)' || true
  return $rc
}

# core_suites TAG MAKEVARS...: pg_regress, isolation and TAP in $tree,
# logged as regressTAG, isolationTAG, tapTAG (TAG is "" for 15, "18" for 18).
count_tap() {	# count_tap LOG → adds prove's results
  local tests bad dubious
  tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$1" | tail -1)
  bad=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$1" | awk '{ split($2, a, "/"); s += a[1] } END { print s + 0 }')
  dubious=$(grep -cE 'Dubious|No subtests run|Parse errors' "$1")
  tests=${tests:-0}
  passed=$((passed + tests - bad)); failed=$((failed + bad + dubious))
  [ "$tests" -gt 0 ] || failed=$((failed + 1))
}
core_suites() {
  local tag=$1; shift
  rm -f "$tree/regression.diffs" "$tree/output_iso/regression.diffs"
  suite "regress$tag" make -s "$@" regresscheck; count_regress "$logs/regress$tag.log"
  [ -f "$tree/regression.diffs" ] && cp "$tree/regression.diffs" "$logs/regress$tag.diffs"
  suite "isolation$tag" make -s "$@" isolationcheck; count_regress "$logs/isolation$tag.log"
  [ -f "$tree/output_iso/regression.diffs" ] && cp "$tree/output_iso/regression.diffs" "$logs/isolation$tag.diffs"
  if ls "$tree"/test/t/*.pl >/dev/null 2>&1; then
    suite "tap$tag" make -s "$@" tapcheck PROVE_FLAGS=--timer; count_tap "$logs/tap$tag.log"
    cp -r "$tree/tmp_check/log" "$logs/tap$tag-server-logs" 2>/dev/null || true
  fi
}

tree=$work/tree
core_suites ""

# Again with assertions compiled into our code (STYLE: test also with
# -DUSE_ASSERT_CHECKING): pg_regress and isolation, which exercise every
# function. The normal build is installed back afterwards.
echo "== assert build"
if (cd "$tree" && make -s clean >/dev/null && make -s PG_CFLAGS=-DUSE_ASSERT_CHECKING &&
    make -s install PG_CFLAGS=-DUSE_ASSERT_CHECKING) >"$logs/assert-build.log" 2>&1; then
  chown -R postgres "$work"
  rm -f "$tree/regression.diffs" "$tree/output_iso/regression.diffs"
  suite regress-assert make -s regresscheck; count_regress "$logs/regress-assert.log"
  [ -f "$tree/regression.diffs" ] && cp "$tree/regression.diffs" "$logs/regress-assert.diffs"
  suite isolation-assert make -s isolationcheck; count_regress "$logs/isolation-assert.log"
  [ -f "$tree/output_iso/regression.diffs" ] && cp "$tree/output_iso/regression.diffs" "$logs/isolation-assert.diffs"
else
  echo "assert build failed"; failed=$((failed + 1))
fi
make -s install >/dev/null

# counted NAME SHOWN COMMAND...: runs a suite that prints its own "N passed,
# M failed" last (as root), logs to test-results/NAME.log, shows the lines
# matching SHOWN, and adds its counts; no summary is a failure.
counted() {
  local name=$1 shown=$2 line; shift 2
  echo "== $name"
  "$@" >"$logs/$name.log" 2>&1
  grep -E "$shown" "$logs/$name.log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/$name.log" | tail -1)
  echo "${line:-$name printed no summary}"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{ print $1 }')))
    failed=$((failed + $(echo "$line" | awk '{ print $3 }')))
  else
    failed=$((failed + 1))
  fi
}

# The HTTP sink's self-test (test/sink).
[ -f test/sink/selftest.sh ] && counted sink '^not ok' bash test/sink/selftest.sh

# The soak (bench/soak/run.sh): 3 minutes of claims, approvals and
# deliveries to the sink with random faults (dispatcher and postmaster
# kills, kill switch, pauses, purge, reinject, cancels); its own count:
# failing is an effect lost, a duplicate to a non-idempotent endpoint, or
# a crash it could not recover from.
[ -f bench/soak/run.sh ] && counted soak '^(ok|not ok) - |^soak: ' bash bench/soak/run.sh --minutes 3

# idemgate on Citus 13 (test/citus/run.sh, as root): a coordinator and two
# workers on this machine; Citus is built from its source tarball when not
# installed, or the suite says in one line why it was skipped.
[ -f test/citus/run.sh ] && counted citus '^(not ok|citus: skipped)' bash test/citus/run.sh

# PostgreSQL 18 (scripts/pg18.sh: an installed /opt/pg18, or a build of
# ../shared/postgres cached in /var/cache/idemgate-pg18, made on first
# use): the same source built against it with -Werror, then pg_regress,
# isolation and TAP (the update path with catalog equality, the fuzz,
# privilege and crash tests among them) and Citus 14. The end-to-end suites
# that exercise HTTP, packaging and n8n rather than the server's API (sink,
# soak, assertions build, prometheus, package, n8n) run on 15 only
# (README.md, "PostgreSQL versions"). Without the sources: one line why.
echo "== pg18"
pg18=$(bash scripts/pg18.sh 2>"$logs/pg18-build.log" | tail -1)
case $pg18 in
  /*pg_config)
    tree=$work/tree18
    cp -a "$root/." "$tree"
    if (cd "$tree" && make -s PG_CONFIG="$pg18" clean >/dev/null 2>&1 &&
        make -s PG_CONFIG="$pg18" && make -s PG_CONFIG="$pg18" install) >"$logs/build18.log" 2>&1; then
      chown -R postgres "$tree"
      core_suites 18 PG_CONFIG="$pg18"
      [ -f test/citus/run.sh ] &&
        counted citus18 '^(not ok|citus: skipped)' env IDEMGATE_PG_CONFIG="$pg18" bash test/citus/run.sh
    else
      echo "the build against PostgreSQL 18 failed (test-results/build18.log)"
      failed=$((failed + 1))
    fi
    tree=$work/tree ;;
  *) echo "${pg18:-pg18: skipped — scripts/pg18.sh printed nothing}" ;;
esac

# monitoring/prometheus with the real tools (exporter, promtool), its own count.
[ -f test/prometheus/run.sh ] &&
  counted prometheus '^(ok|not ok) - ' runuser -u postgres -- env -C "$tree" bash test/prometheus/run.sh

# The Debian package (test/package/run.sh, as root: it builds, installs and
# removes postgresql-15-idemgate, then puts make install's files back).
[ -f test/package/run.sh ] && counted package '^(ok|not ok) - ' bash test/package/run.sh

# The runnable blocks of README.md and docs/*.md against a fresh cluster, and
# examples/alerts_listener.sh through a server restart; see test/docs/run.sh.
[ -f test/docs/run.sh ] && counted docs '^(not ok|# )' bash test/docs/run.sh

# The shipped n8n workflows in a real n8n (installed from npm into a cache
# directory on first use), driven on loopback; see test/n8n/run.sh.
counted n8n '^(not ok|# )' bash test/n8n/run.sh

# The n8n community-node package (n8n/): built, unit-tested, linted and
# packed, installed into the same cached n8n, and the workflows built from
# its nodes (examples/n8n-idemgate-nodes/) driven on loopback; see test/n8n-nodes/run.sh.
counted n8n-nodes '^(not ok|# )' bash test/n8n-nodes/run.sh

for f in "$logs"/*.diffs; do [ -f "$f" ] && { echo "--- $f"; head -c 20000 "$f"; }; done
rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
