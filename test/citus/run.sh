#!/usr/bin/env bash
# test/citus/run.sh — idemgate on Citus (SPEC §16): TAP tests on one machine,
# a coordinator and two workers (three PostgreSQL clusters per test file,
# test/citus/CitusCluster.pm). Run as root, after `make install` of idemgate.
# The PostgreSQL is $IDEMGATE_PG_CONFIG's (default Debian's 15): Citus 13
# on 15, Citus 14 on 16 and later (Citus 14 no longer supports 15).
#
# 1. Citus: used when citus.so is in that PostgreSQL's library directory;
#    otherwise built from the source tarball ($IDEMGATE_CITUS_TARBALL, else
#    ../shared/citus/citus-13.*.tar.gz or citus-14.*.tar.gz next to the
#    repository) in /var/cache/idemgate-citus (15) or
#    /var/cache/idemgate-citus/pg<major> (the built tree is kept: a rerun is
#    only `make install`). Neither available, or the build fails: one line
#    "citus: skipped — <reason>", then "0 passed, 0 failed", exit 0.
# 2. prove test/citus/t as postgres in a scratch copy of test/, like
#    `make tapcheck`; prints one "ok - ..." / "not ok - ..." line per TAP
#    subtest and "N passed, M failed" last; exits non-zero on any failure.
# The whole run is bounded (IDEMGATE_CITUS_TIMEOUT seconds, default 1200);
# servers left behind by a killed test are stopped by their data directory.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

pg_config=${IDEMGATE_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
[ -x "$pg_config" ] || { echo "citus: skipped — no $pg_config"; echo "0 passed, 0 failed"; exit 0; }
pgbin=$("$pg_config" --bindir)
pglib=$("$pg_config" --pkglibdir)
pgxs_src=$(dirname "$(dirname "$("$pg_config" --pgxs)")")	# .../pgxs/src
major=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
if [ "$major" = 15 ]; then
	cache=/var/cache/idemgate-citus citus_series=13
else
	cache=/var/cache/idemgate-citus/pg$major citus_series=14
fi

skip() {
	echo "citus: skipped — $1"
	echo "0 passed, 0 failed"
	exit 0
}

# --- 1. Citus -----------------------------------------------------------
ensure_citus() {
	[ -f "$pglib/citus.so" ] && return 0
	local tarball=${IDEMGATE_CITUS_TARBALL:-}
	if [ -z "$tarball" ]; then
		# beside the repository, or in this machine's shared folder (a CI
		# clone may live elsewhere)
		# Citus 13 for PostgreSQL 15 (Citus 14 supports 16 to 18 only)
		tarball=$(ls "$root"/../shared/citus/citus-$citus_series.*.tar.gz \
			/work/shared/citus/citus-$citus_series.*.tar.gz 2>/dev/null | sort | tail -1)
	fi
	[ -n "$tarball" ] && [ -f "$tarball" ] || skip "no citus.so in $pglib and no source tarball (set IDEMGATE_CITUS_TARBALL)"
	[ "$(id -u)" -eq 0 ] || skip "citus.so missing and not root: cannot build $tarball"
	mkdir -p "$cache" || skip "cannot create $cache"
	local name tree log
	name=$(basename "$tarball" .tar.gz)
	tree="$cache/$name"
	log="$cache/build.log"
	echo "citus: building $name in $tree (log: $log)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		libkrb5-dev liblz4-dev libzstd-dev libcurl4-openssl-dev >/dev/null 2>&1 ||
		echo "citus: apt-get install of the build dependencies failed (trying anyway)" >&2
	(
		flock 9
		set -e
		if [ ! -f "$tree/Makefile.global" ]; then
			rm -rf "$tree"
			tar -xzf "$tarball" -C "$cache"
			cd "$tree"
			./configure PG_CONFIG="$pg_config"
		fi
		cd "$tree"
		make -j2
		make install
	) 9>"$cache/.lock" >"$log" 2>&1 || skip "building $name failed (see $log)"
	[ -f "$pglib/citus.so" ] || skip "built $name but $pglib/citus.so is still missing"
}
ensure_citus
[ -f "$pglib/idemgate.so" ] || skip "idemgate is not installed (make install first)"
[ "$(id -u)" -eq 0 ] || skip "run as root (the servers run as postgres)"
id postgres >/dev/null 2>&1 || skip "no postgres user"

# --- 2. The TAP tests, as postgres, in a scratch copy --------------------
work=$(mktemp -d /tmp/idemgate-citus.XXXXXX)
mkdir -p "$work/tree"
cp -a "$root/test" "$work/tree/test"
rm -rf "$work/tree/test/tmp_check"
chown -R postgres "$work"
logs="$root/test-results"
mkdir -p "$logs"
suffix=$([ "$major" = 15 ] || echo "$major")
log="$logs/citus$suffix-prove.log"

limit=${IDEMGATE_CITUS_TIMEOUT:-1200}
# IDEMGATE_CITUS_TESTS="001 010" runs only the files whose names start so.
if [ -n "${IDEMGATE_CITUS_TESTS:-}" ]; then
	tests=$(cd "$work/tree" && for p in $IDEMGATE_CITUS_TESTS; do ls test/citus/t/"$p"*.pl; done | sort -u)
else
	tests=$(cd "$work/tree" && ls test/citus/t/*.pl | sort)
fi
# TESTDATADIR and TESTLOGDIR as PGXS sets them on 16 and later (whose
# PostgreSQL::Test::Utils otherwise writes the logs to ./log); 15 derives
# both from TESTDIR.
# timeout signals the whole process group: every test script gets SIGTERM,
# PostgreSQL::Test::Cluster's END block stops its nodes (immediate).
runuser -u postgres -- env -C "$work/tree" \
	TESTDIR="$work/tree" PATH="$pgbin:$PATH" PGPORT=65432 \
	TESTDATADIR="$work/tree/tmp_check" TESTLOGDIR="$work/tree/tmp_check/log" \
	PG_REGRESS="$pgxs_src/test/regress/pg_regress" \
	timeout -k 20 "$limit" /usr/bin/prove -v \
	-I "$pgxs_src/test/perl/" -I test/citus -I test/t \
	$tests >"$log" 2>&1
rc=$?
[ "$rc" -eq 124 ] && echo "citus: the suite ran longer than ${limit}s and was stopped" | tee -a "$log"

# Servers left running (a test killed by the timeout): stop each by its data
# directory (they are ours: started under $work).
for pidfile in $(find "$work" -name postmaster.pid 2>/dev/null); do
	runuser -u postgres -- "$pgbin/pg_ctl" -D "$(dirname "$pidfile")" -m immediate -w stop >/dev/null 2>&1 || true
done
rm -rf "$logs/citus$suffix-server-logs"
cp -r "$work/tree/tmp_check/log" "$logs/citus$suffix-server-logs" 2>/dev/null || true

# One line per subtest: "ok - <file>: <name>" / "not ok - <file>: <name>".
perl -ne '
	BEGIN { $f = ""; $bad_files = 0 }
	if (m{^(test/citus/t/\S+?)\.pl \.\.}) { $f = $1; $f =~ s{.*/}{}; }
	if (/^(not ok|ok) \d+(?: - (.*))?$/ && $f ne "") {
		my ($s, $d) = ($1, $2 // "");
		if ($d =~ /# (?:TODO|SKIP)/i) { $s = "ok" }
		print "$s - $f: $d\n";
		$s eq "ok" ? $ok++ : $nok++;
	}
	# A script that died: no plan (done_testing not reached), or a bail out.
	$bad_files++ if /^\s*Parse errors: No plan found/ || /^Bailout called/;
	END { print STDERR "ok=", $ok+0, " nok=", $nok+0, " bad=", $bad_files, "\n" }
' "$log" 2>"$work/counts"
read -r passed failed bad < <(sed -n 's/^ok=\([0-9]*\) nok=\([0-9]*\) bad=\([0-9]*\)$/\1 \2 \3/p' "$work/counts")
passed=${passed:-0}; failed=${failed:-0}; bad=${bad:-0}
# A script that died (no plan, bail out) counts as one failure more, and so
# does a run that reported nothing at all.
# Why a script died: PostgreSQL::Test sends its stderr to the regress log.
for f in "$work"/tree/tmp_check/log/regress_log_*; do
	[ -f "$f" ] || continue
	perl -ne '
		BEGIN { ($n) = $ARGV[0] =~ m{regress_log_(\S+)$} }
		if (/^error running SQL/) { $left = 3 }
		$left = 1 if /^[^#\[].* at test\/citus\/t\/\S+ line \d+\.$/ || /^killed by signal/;
		if ($left > 0) { print "# $n: $_"; $left-- }' "$f" | head -12
done
failed=$((failed + bad))
[ "$passed" -gt 0 ] || [ "$failed" -gt 0 ] || failed=1
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1

rm -rf "$work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
