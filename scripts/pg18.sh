#!/usr/bin/env bash
# scripts/pg18.sh — a PostgreSQL 18 to build and test idemgate against, as
# root on Debian 12 (which packages only 15). Prints the pg_config to use on
# its last line, or "pg18: skipped — <reason>" and exits 3.
#
# Order: $IDEMGATE_PG18_CONFIG, then /opt/pg18/bin/pg_config (a build the
# user made as ../shared/postgres/README.md says), then the cached build in
# /var/cache/idemgate-pg18/<version>, made from the release tarball
# (../shared/postgres/postgresql-18_*.orig.tar.bz2 beside the repository or
# $IDEMGATE_PG18_TARBALL) on first use: the server, contrib, and pgTAP
# (pgtap_*.orig.tar.gz beside it). A machine pays the ~20 minutes once; the
# build is keyed by the tarball's name, so a new release builds anew.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=/var/cache/idemgate-pg18

skip() { echo "pg18: skipped — $1"; exit 3; }

if [ -n "${IDEMGATE_PG18_CONFIG:-}" ]; then
	[ -x "$IDEMGATE_PG18_CONFIG" ] || skip "IDEMGATE_PG18_CONFIG=$IDEMGATE_PG18_CONFIG is not executable"
	echo "$IDEMGATE_PG18_CONFIG"; exit 0
fi
if [ -x /opt/pg18/bin/pg_config ] && [ -f "$(/opt/pg18/bin/pg_config --sharedir)/extension/pgtap.control" ]; then
	echo /opt/pg18/bin/pg_config; exit 0
fi

tarball=${IDEMGATE_PG18_TARBALL:-$(ls "$root"/../shared/postgres/postgresql-18_*.orig.tar.bz2 \
	/work/shared/postgres/postgresql-18_*.orig.tar.bz2 2>/dev/null | sort | tail -1)}
[ -n "$tarball" ] && [ -f "$tarball" ] || skip "no PostgreSQL 18 source tarball (../shared/postgres/postgresql-18_*.orig.tar.bz2; set IDEMGATE_PG18_TARBALL)"
pgtap=$(ls "$(dirname "$tarball")"/pgtap_*.orig.tar.gz 2>/dev/null | sort | tail -1)
[ -n "$pgtap" ] || skip "no pgTAP source tarball beside $tarball"
version=$(basename "$tarball" | sed -n 's/^postgresql-18_\([0-9.]*\)\.orig\.tar\.bz2$/\1/p')
[ -n "$version" ] || skip "cannot read the version from $(basename "$tarball")"
prefix=$cache/$version
if [ -f "$prefix/.complete" ]; then echo "$prefix/bin/pg_config"; exit 0; fi
[ "$(id -u)" -eq 0 ] || skip "no PostgreSQL 18 build cached and not root: cannot build $tarball"

mkdir -p "$cache" || skip "cannot create $cache"
log=$cache/build-$version.log
echo "pg18: building PostgreSQL $version into $prefix (log: $log)" >&2
need=()
for p in bison flex libicu-dev libssl-dev zlib1g-dev libreadline-dev libipc-run-perl \
	pkg-config libtap-parser-sourcehandler-pgtap-perl; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; } ||
		skip "apt-get install ${need[*]} failed"
fi
(
	flock 9
	set -e
	[ -f "$prefix/.complete" ] && exit 0
	src=$cache/src-$version
	rm -rf "$src" "$prefix"; mkdir -p "$src"
	tar -xjf "$tarball" -C "$src" --strip-components=1
	cd "$src"
	./configure --prefix="$prefix" --with-openssl --with-icu --enable-tap-tests
	make -j2 -s
	make -s install
	make -C contrib -j2 -s
	make -C contrib -s install
	# the TAP modules (PostgreSQL::Test::Cluster) for prove_installcheck
	make -C src/test/perl -s install
	mkdir -p "$src/pgtap"
	tar -xzf "$pgtap" -C "$src/pgtap" --strip-components=1
	make -C "$src/pgtap" -s PG_CONFIG="$prefix/bin/pg_config" install
	cd /; rm -rf "$src"
	touch "$prefix/.complete"
) 9>"$cache/.lock" >"$log" 2>&1 || skip "building PostgreSQL $version failed (see $log)"
echo "$prefix/bin/pg_config"
