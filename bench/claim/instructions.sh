#!/usr/bin/env bash
# bench/claim/instructions.sh — CPU instructions per claim, counted by
# callgrind: deterministic, unlike tps on a shared machine.
#
# Starts a throwaway cluster under valgrind --tool=callgrind (every backend
# forked by the postmaster is counted, collection on inside PostgresMain
# only), then runs each script with pgbench -M prepared -c 1 twice, N1 and
# N2 transactions on a fresh connection each; (cost(N2) - cost(N1)) /
# (N2 - N1) is the instruction count of one transaction without connection
# start-up and first-use planning. Prints them side by side and the ratio
# baseline / script (the throughput ratio a CPU-bound run would reach).
# Run as root after `make install`; keeps the callgrind files in KEEP when set
# (callgrind_annotate them to see where the instructions go).
#   N1=500 N2=5500 SCRIPTS="baseline.sql claim.sql baseline_dup.sql claim_dup.sql" KEEP=/tmp/cg
set -euo pipefail
N1=${N1:-500}
N2=${N2:-5500}
SCRIPTS=${SCRIPTS:-baseline.sql claim.sql baseline_dup.sql claim_dup.sql}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/../lib.sh"
bench_cluster instr 55433 "autovacuum = off" "synchronous_commit = off"
keep_cleanup() {
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$work"/cg.* "$KEEP"/ 2>/dev/null || true; fi
	as_pg "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
	bench_cleanup
}
trap keep_cleanup EXIT
psql_ -d bench >/dev/null < "$here/setup.sql"
psql_ -d bench -c "CHECKPOINT"
[ -n "${SETUP_SQL:-}" ] && psql_ -d bench -c "$SETUP_SQL"
bench_copy "$here"/baseline*.sql "$here"/claim*.sql
as_pg "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null

# The same cluster, now under callgrind.
as_pg bash -c "cd '$work' && exec valgrind --tool=callgrind --quiet --collect-atstart=no \
	--toggle-collect=PostgresMain --callgrind-out-file='$work/cg.%p' \
	'$bindir/postgres' -D '$work/data' >'$work/vlog' 2>&1" &
for _ in $(seq 300); do
	as_pg "$bindir/pg_isready" -q -h "$work" -p "$port" -d postgres && break
	sleep 1
done

cost() {	# cost SCRIPT N → instructions of that backend
	as_pg "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared -c 1 -t "$2" -f "$work/$1" bench \
		>"$work/pgbench.out" 2>&1 || { cat "$work/pgbench.out"; exit 1; }
	sleep 2	# the backend writes its file on exit
	local f
	f=$(ls -t "$work"/cg.* | head -1)
	awk '/^summary:/ { print $2 }' "$f" | tail -1
	mv "$f" "$f.$1.$2"
}

printf '%-18s %14s\n' script "instr/call"
declare -A per
for s in $SCRIPTS; do
	a=$(cost "$s" "$N1")
	b=$(cost "$s" "$N2")
	per[$s]=$(( (b - a) / (N2 - N1) ))
	printf '%-18s %14s\n' "$s" "${per[$s]}"
done
for pair in "baseline.sql claim.sql" "baseline_dup.sql claim_dup.sql"; do
	set -- $pair
	if [ -n "${per[$1]:-}" ] && [ -n "${per[$2]:-}" ]; then
		awk -v b="${per[$1]}" -v c="${per[$2]}" -v n="$2" \
			'BEGIN { printf "%s: %.3f of the baseline'\''s instructions → CPU-bound ratio %.3f\n", n, c / b, b / c }'
	fi
done
