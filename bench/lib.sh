# shellcheck shell=bash
# bench/lib.sh — the harness the pgbench benches share (claim, sequence,
# pull, storage): a throwaway cluster, pgbench runs, alternating rounds and
# their medians. Sourced by bench/*/run.sh (as root, after `make install`):
#   here=$(cd "$(dirname "$0")" && pwd); . "$here/../lib.sh"
# (bench/dispatch/run.sh keeps its own: it also runs as non-root and
# starts the loopback sink.)

# PG_CONFIG picks the PostgreSQL (e.g. PostgreSQL 18: PG_CONFIG=/var/cache/idemgate-pg18/18.6/bin/pg_config).
bindir=$("${PG_CONFIG:-pg_config}" --bindir)

as_pg() { runuser -u postgres -- "$@"; }

# bench_psql ARGS: psql as postgres on the bench cluster, stopping on error.
# A bench calls it through psql_, which it may redefine (e.g. with -A -t).
bench_psql() { as_pg "$bindir/psql" -h "$work" -p "$port" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_() { bench_psql "$@"; }

# bench_cluster NAME PORT [CONF_LINE...]: starts a throwaway cluster in
# $work (/tmp/idemgate-bench-NAME.*, removed on exit) on unix socket only,
# port $PORT or else PORT, idemgate preloaded with no dispatcher, the
# CONF_LINEs appended to the common settings; creates database bench.
bench_cluster() {
  local name=$1 line
  work=$(mktemp -d "/tmp/idemgate-bench-$name.XXXXXX")
  chown postgres "$work"
  port=${PORT:-$2}
  shift 2
  trap bench_cleanup EXIT
  as_pg "$bindir/initdb" -D "$work/data" -A trust >/dev/null
  cat >> "$work/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$work'
listen_addresses = ''
shared_preload_libraries = 'idemgate'
idemgate.dispatchers = 0
max_connections = 50
shared_buffers = 256MB
max_wal_size = 4GB
CONF
  for line in "$@"; do echo "$line" >> "$work/data/postgresql.conf"; done
  as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w start >/dev/null
  psql_ -d postgres -c "CREATE DATABASE bench"
}

bench_cleanup() {
  as_pg "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}

# bench_copy FILE...: copies the bench's scripts into $work for pgbench.
bench_copy() { cp "$@" "$work"/ && chown postgres "$work"/*.sql; }

# bench_tps SCRIPT SYNC: one pgbench run of $work/SCRIPT on database bench
# for SECONDS_PER_RUN seconds, CLIENTS clients, -M prepared, with
# synchronous_commit SYNC; prints its tps, rounded.
bench_tps() {
  as_pg env PGOPTIONS="-c synchronous_commit=$2" "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared \
      -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$work/$1" bench 2>"$work/err" |
    awk '/^tps = / { printf "%.0f\n", $3 }'
}

# bench_median: the median of the numbers on stdin (the lower of the two
# middle ones for an even count).
bench_median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# bench_rounds FORMAT "A..." "B...": ROUNDS rounds, each running command A
# then command B (a function and its words; each prints one figure), so
# that machine noise hits both sides; each round is printed with
# printf FORMAT ROUND A_FIGURE B_FIGURE. bench_before_round, where the
# bench defines it, runs before each round. Sets med_a and med_b (the
# medians) and ratio (med_b / med_a, 3 decimals).
bench_rounds() {
  local fmt=$1 i figs_a=() figs_b=() cmd_a cmd_b
  read -ra cmd_a <<< "$2"
  read -ra cmd_b <<< "$3"
  for i in $(seq "$ROUNDS"); do
    if declare -F bench_before_round >/dev/null; then bench_before_round; fi
    figs_a+=("$("${cmd_a[@]}")")
    figs_b+=("$("${cmd_b[@]}")")
    # shellcheck disable=SC2059  # the format is the caller's
    printf "$fmt\n" "$i" "${figs_a[-1]}" "${figs_b[-1]}"
  done
  med_a=$(printf '%s\n' "${figs_a[@]}" | bench_median)
  med_b=$(printf '%s\n' "${figs_b[@]}" | bench_median)
  # shellcheck disable=SC2034  # read by the bench
  ratio=$(awk -v a="$med_a" -v b="$med_b" 'BEGIN { printf "%.3f", b / a }')
}
