#!/usr/bin/env bash
# test/package/run.sh — the Debian package, built and used the way an
# operator would, as root (scripts/test.sh runs it):
#   1. test/package/meta_version.sh (META.json, CHANGELOG.md and
#      debian/changelog follow default_version);
#   2. a clone of the repository (committed files) built with
#      `dpkg-buildpackage -us -uc -b` (no tests run in the build);
#   3. `dpkg -c`: the library, the control file, every released script and
#      the update to default_version, nothing outside PostgreSQL's and the
#      doc directories;
#   4. `apt-get install ./postgresql-15-idemgate_*.deb`, which would change
#      no other package, and `dpkg -V` finds the files as packaged;
#   5. a throw-away cluster (as postgres, unix socket in the temp directory,
#      shared_preload_libraries = 'idemgate'): CREATE EXTENSION gives
#      default_version and claim() answers claimed; CREATE EXTENSION
#      VERSION '1.0' then ALTER EXTENSION UPDATE reaches default_version
#      through the packaged update scripts;
#   6. `apt-get remove`: none of the package's files remain.
# `make install` and the package install the same paths: the files
# `make install` put there (not owned by any package) are saved first and
# put back after the removal (and on any exit), so later suites still find
# the extension. Every step has a timeout; everything it starts is stopped
# on exit. Prints "ok - ..." / "not ok - ..." and "N passed, M failed" last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "not ok - run as root"; echo "0 passed, 1 failed"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$($PG_CONFIG --bindir)
pkglibdir=$($PG_CONFIG --pkglibdir)
extdir=$($PG_CONFIG --sharedir)/extension
pgmajor=$($PG_CONFIG --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
pkg=postgresql-$pgmajor-idemgate
version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$root/idemgate.control")

tmp=$(mktemp -d /tmp/idemgate-package.XXXXXX)
chmod 755 "$tmp"	# apt's _apt user reads the .deb; postgres reaches its cluster
passed=0; failed=0
installed_by_us=; restored=
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
show() { sed 's/^/#   /' "$1" | tail -n "${2:-30}"; }

# What `make install` put where the package goes: the library, its bitcode
# and the extension's files, kept with their paths under $tmp/saved.
made_files() {
  ls -d "$pkglibdir/idemgate.so" "$pkglibdir/bitcode/idemgate.index.bc" "$pkglibdir/bitcode/idemgate" \
        "$extdir"/idemgate.control "$extdir"/idemgate--*.sql 2>/dev/null
}
restore() {	# puts the saved make-installed files back, once
  [ -z "$restored" ] && [ -d "$tmp/saved" ] || return 0
  restored=1
  local f
  while read -r f; do
    mkdir -p "$(dirname "$f")" && cp -a "$tmp/saved$f" "$(dirname "$f")/"
  done <"$tmp/made.list"
}
cleanup() {
  [ -f "$tmp/run/pg/postmaster.pid" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$tmp/run/pg" -m immediate -w stop >/dev/null 2>&1
  [ -n "$installed_by_us" ] && timeout 300 apt-get remove -y -qq "$pkg" >/dev/null 2>&1
  restore
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# 1. Versions.
if timeout 60 bash "$root/test/package/meta_version.sh" >"$tmp/meta.log" 2>&1; then
  ok "meta_version.sh: $(tail -1 "$tmp/meta.log")"
else
  not_ok "meta_version.sh: $(tail -1 "$tmp/meta.log")"; grep '^not ok' "$tmp/meta.log" | sed 's/^/#   /'
fi

if dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -q installed; then
  not_ok "$pkg is not installed before the test (remove it, then make install)"; finish
fi

# 2. Build from a clone: only committed files, and a tree the build may dirty.
src="$tmp/src/idemgate"
if ! timeout 120 git -c safe.directory='*' clone -q "$root" "$src" 2>"$tmp/clone.log"; then
  not_ok "git clone"; show "$tmp/clone.log"; finish
fi
debver=$(cd "$src" && dpkg-parsechangelog -S Version)
deb="$tmp/src/${pkg}_${debver}_$(dpkg --print-architecture).deb"
start=$SECONDS
if (cd "$src" && timeout 1200 dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
  ok "dpkg-buildpackage -us -uc -b ($((SECONDS - start)) s)"
else
  not_ok "dpkg-buildpackage -us -uc -b"; show "$tmp/build.log" 60; finish
fi
check "built $(basename "$deb")" test -f "$deb"
[ -f "$deb" ] || finish
echo "# $(basename "$deb"): $(stat -c %s "$deb") bytes"
check "the build ran no tests" bash -c "! grep -qE 'pgxs_test|installcheck|pg_regress' '$tmp/build.log'"

# 3. Contents.
dpkg -c "$deb" | awk '$1 !~ /^d/ { print $NF }' | sed 's|^\./|/|' >"$tmp/contents"	# files
updir=$(cd "$src" && ls -d sql/*--"$version" 2>/dev/null | head -1)
expected=("$pkglibdir/idemgate.so" "$extdir/idemgate.control" "/usr/share/doc/$pkg/copyright")
for f in "$src"/idemgate--*.sql; do expected+=("$extdir/$(basename "$f")"); done
[ -n "$updir" ] && expected+=("$extdir/idemgate--$(basename "$updir").sql")
for f in "${expected[@]}"; do
  check "package contains $f" grep -qxF "$f" "$tmp/contents"
done
check "package contains the update to $version (idemgate--*--$version.sql)" \
  grep -qE "^$extdir/idemgate--[0-9.]+--$version\.sql\$" "$tmp/contents"
stray=$(grep -vE "^($pkglibdir|$extdir|/usr/share/doc/$pkg)/" "$tmp/contents" | tr '\n' ' ')
check "package installs files only under $pkglibdir, $extdir and /usr/share/doc/$pkg${stray:+ (also: $stray)}" \
  test -z "$stray"
mkdir -p "$tmp/x" && dpkg-deb -x "$deb" "$tmp/x"
check "packaged idemgate.control has default_version '$version'" \
  grep -qx "default_version = '$version'" "$tmp/x$extdir/idemgate.control"

# 4. Install, after saving what make install put there.
mkdir -p "$tmp/saved"
made_files >"$tmp/made.list"
while read -r f; do mkdir -p "$tmp/saved$(dirname "$f")" && cp -a "$f" "$tmp/saved$(dirname "$f")/"; done <"$tmp/made.list"
echo "# saved $(wc -l <"$tmp/made.list") make-installed paths"
timeout 300 apt-get install -s "$deb" >"$tmp/sim.log" 2>&1
others=$(grep -E '^(Inst|Remv)' "$tmp/sim.log" | awk '{ print $2 }' | grep -vx "$pkg" | tr '\n' ' ')
if [ -n "$others" ]; then
  not_ok "apt-get install would change other packages: $others"; finish
fi
ok "apt-get install changes no other package"
if timeout 300 apt-get install -y -qq --no-install-recommends "$deb" >"$tmp/install.log" 2>&1; then
  installed_by_us=1; ok "apt-get install ./$(basename "$deb")"
else
  not_ok "apt-get install ./$(basename "$deb")"; show "$tmp/install.log"; finish
fi
check "dpkg: $pkg installed" \
  test "$(dpkg-query -W -f='${db:Status-Status}' "$pkg")" = installed
check "dpkg -S: idemgate.so belongs to $pkg" bash -c "dpkg -S '$pkglibdir/idemgate.so' | grep -q '^$pkg:'"
check "dpkg -V: installed files are as packaged" test -z "$(dpkg -V "$pkg" 2>&1)"
dpkg -L "$pkg" >"$tmp/owned"
while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done <"$tmp/owned" >"$tmp/owned.files"

# 5. A throw-away cluster with the packaged library preloaded.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo 55470)
run="$tmp/run"	# the cluster, its socket and its log: the postgres user's
install -d -o postgres -m 700 "$run"
asdb() {	# asdb DB SQL → the last result; errors and notices go to psql.log
  timeout 60 runuser -u postgres -- "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$run" -p "$port" -d "$1" -c "$2" 2>>"$tmp/psql.log"
}
if timeout 120 runuser -u postgres -- "$bindir/initdb" -D "$run/pg" -A trust -U postgres >"$tmp/initdb.log" 2>&1; then
  cat >>"$run/pg/postgresql.conf" <<CONF
listen_addresses = ''
port = $port
unix_socket_directories = '$run'
shared_preload_libraries = 'idemgate'
idemgate.database = 'pkg'
CONF
  if timeout 120 runuser -u postgres -- "$bindir/pg_ctl" -D "$run/pg" -l "$run/server.log" -t 60 -w start >/dev/null 2>&1; then
    ok "cluster starts with shared_preload_libraries = 'idemgate'"
    asdb postgres 'CREATE DATABASE pkg' >/dev/null
    asdb postgres 'CREATE DATABASE pkg_update' >/dev/null
    out=$(asdb pkg "CREATE EXTENSION idemgate; SELECT extversion FROM pg_extension WHERE extname = 'idemgate'")
    check "CREATE EXTENSION idemgate gives version $version (got: $out)" test "$out" = "$version"
    out=$(asdb pkg "SELECT outcome FROM idemgate.claim('pkg-1', '{}')")
    check "claim('pkg-1') answers claimed (got: $out)" test "$out" = claimed
    out=$(asdb pkg "SELECT outcome FROM idemgate.claim('pkg-1', '{}')")
    check "a second claim('pkg-1') answers duplicate (got: $out)" test "$out" = duplicate
    out=$(asdb pkg_update "CREATE EXTENSION idemgate VERSION '1.0'; ALTER EXTENSION idemgate UPDATE;
                           SELECT extversion FROM pg_extension WHERE extname = 'idemgate'")
    check "CREATE EXTENSION VERSION '1.0' + ALTER EXTENSION UPDATE gives $version (got: $out)" test "$out" = "$version"
    grep -E 'ERROR|FATAL' "$tmp/psql.log" 2>/dev/null | sed 's/^/#   /'
    timeout 120 runuser -u postgres -- "$bindir/pg_ctl" -D "$run/pg" -t 60 -m fast -w stop >/dev/null 2>&1
    check "cluster stops" test ! -f "$run/pg/postmaster.pid"
  else
    not_ok "cluster starts with shared_preload_libraries = 'idemgate'"; show "$run/server.log"
  fi
else
  not_ok "initdb"; show "$tmp/initdb.log"
fi

# 6. Remove: the package's files go, then make install's come back.
if timeout 300 apt-get remove -y -qq "$pkg" >"$tmp/remove.log" 2>&1; then
  installed_by_us=; ok "apt-get remove $pkg"
else
  not_ok "apt-get remove $pkg"; show "$tmp/remove.log"
fi
check "dpkg: $pkg no longer installed" \
  test "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" != installed
left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done <"$tmp/owned.files")
check "none of the package's $(wc -l <"$tmp/owned.files") files remain${left:+ (left: $left)}" test -z "$left"
restore
differ=$(while read -r f; do diff -rq "$tmp/saved$f" "$f" >/dev/null 2>&1 || echo "$f"; done <"$tmp/made.list")
check "make-installed files are back ($(wc -l <"$tmp/made.list") paths)${differ:+ (missing or different: $differ)}" test -z "$differ"
finish
