#!/usr/bin/env bash
# bench/citus/run.sh — claims and deliveries through a Citus coordinator with
# 1 and with 2 workers, beside a single node, in the same run.
#
# All the nodes share this machine's cores, so wall-clock scaling cannot be
# shown here; what is measured is where the work goes:
#   - CPU per operation on each node: utime + stime of every process of the
#     node's cluster (the postmaster, its children from `ps --ppid`, each
#     with the children it reaped, through cutime/cstime: backends that
#     exit are counted), read from /proc before and after, split into the
#     idemgate dispatchers and the other processes. Per claim: the others
#     (the dispatchers only poll then); per delivery: all. The idle rate
#     (IDLE_SECS with nothing to do) is shown beside;
#   - rows per worker after the claims (per-shard counts,
#     run_command_on_shards + pg_dist_placement), deliveries per node (the completed counters
#     of dispatcher_status(), which on the coordinator names every node).
#
# Setups, one after the other, each on fresh clusters (127.0.0.1 only,
# stopped before the next starts):
#   single   one node, shared_preload_libraries = 'idemgate';
#   1, 2     a coordinator and 1 or 2 workers, 'citus,idemgate',
#            max_prepared_transactions = 50, wal_level = logical; CREATE
#            EXTENSION citus everywhere, citus_set_coordinator_host,
#            citus_add_node, CREATE EXTENSION idemgate on the coordinator,
#            SELECT idemgate.distribute(SHARDS).
# In each:
#   claims      pgbench -M prepared, CLIENTS clients, CLAIMS transactions in
#               all (fixed count, not fixed time) of claim.sql (a new key
#               each) against the coordinator (the single node);
#   seed        the seed's INSERT ... ON CONFLICT ... RETURNING
#               (bench/claim/baseline.sql) on a plain table with the columns
#               of runs, CLAIMS times, the same way: on Citus a distributed
#               table (SHARDS shards), through the coordinator;
#   wclaims     on Citus, the same claims sent to the workers instead (one
#               pgbench per worker at once, CLIENTS / workers clients each):
#               a worker runs a claim of a key it holds, and delegates the
#               others to their node (docs/citus.md, "Claims");
#   (autovacuum off; VACUUM ANALYZE and CHECKPOINT on every node before
#   each measured window)
#   deliveries  endpoint 'bench' on the loopback sink (test/sink/sink.c, /ok);
#               kill switch off; DELIVERIES transactions of enqueue.sql (claim
#               + enqueue_effect); switch on; measured from the switch-on to
#               the last effect completed (the sink's request counter is
#               polled, not the database, so that polling costs the nodes
#               nothing until the last requests are in).
# Prints one line per measurement, then a table and the shares (report.py).
#
# Run as root after `make install` (the servers run as postgres through
# runuser). Without citus.so it says so in one line and exits 0
# (`bash test/citus/run.sh` builds Citus from the tarball). Bounded: the
# whole run is stopped after TIMEOUT seconds; ~9-10 minutes with the defaults
# at load average 10 (deliveries through Citus ran at 32-63/s then).
#   CLAIMS=5000 DELIVERIES=1000 CLIENTS=4 SHARDS=32 SETUPS="single 1 2"
#   IDLE_SECS=30 PORT=55460 (PORT..PORT+2) TIMEOUT=900 SYNC=on
#   POLL= (idemgate.poll_interval; empty: the default, 1s)
#   LOCAL_SHARDS= (idemgate.citus_local_shards; empty: the default, on; off:
#     every statement through Citus's planner, as before 1.3)
#   KEEP_LOGS= (a directory: the nodes' server logs are copied there at the end)
set -euo pipefail
CLAIMS=${CLAIMS:-5000}
DELIVERIES=${DELIVERIES:-1000}
CLIENTS=${CLIENTS:-4}
SHARDS=${SHARDS:-32}
SETUPS=${SETUPS:-single 1 2}
IDLE_SECS=${IDLE_SECS:-30}
PORT=${PORT:-55460}
TIMEOUT=${TIMEOUT:-900}
SYNC=${SYNC:-on}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bindir=$(pg_config --bindir)
pglib=$(pg_config --pkglibdir)

if [ ! -f "$pglib/citus.so" ]; then
  echo "bench/citus: skipped — no citus.so in $pglib (bash test/citus/run.sh builds it)"
  exit 0
fi
[ -f "$pglib/idemgate.so" ] || { echo "bench/citus: idemgate is not installed (make install first)"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench/citus: run as root (the servers run as postgres)"; exit 1; }

# The whole run is bounded: run again under timeout (SIGTERM, then KILL).
if [ -z "${BENCH_CITUS_BOUNDED:-}" ]; then
  exec timeout -k 20 "$TIMEOUT" env BENCH_CITUS_BOUNDED=1 bash "$0" "$@"
fi

as_pg() { runuser -u postgres -- "$@"; }
TICKS=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/idemgate-bench-citus.XXXXXX)
chmod 755 "$work"
chown postgres "$work"
datadirs=()
sink_pid=
cleanup() {
  local d
  for d in "${datadirs[@]}"; do
    [ -f "$d/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
  done
  if [ -n "$sink_pid" ] && kill -0 "$sink_pid" 2>/dev/null; then
    kill -TERM "$sink_pid"; wait "$sink_pid" 2>/dev/null || true
  fi
  # KEEP_LOGS=DIR: the nodes' server logs are copied there first.
  if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS" && cp "$work"/*.log "$KEEP_LOGS"/ 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "bench/citus: stopped (signal or TIMEOUT=${TIMEOUT}s)" >&2; exit 143' TERM INT

# q PORT SQL: psql on database bench of the node at PORT, unaligned, tuples
# only; on error the statement and the error, and the run stops.
q() {
  local out
  if ! out=$(as_pg "$bindir/psql" -h 127.0.0.1 -p "$1" -d "${DB:-bench}" -X -q -A -t -v ON_ERROR_STOP=1 -c "$2" 2>&1); then
    printf 'bench/citus: FAILED on port %s:\n  statement: %s\n  %s\n' "$1" "$2" "$out" >&2
    exit 1
  fi
  printf '%s\n' "$out"
}

# node_start NAME PORT PRELOAD: a throwaway cluster in $work/NAME, on
# 127.0.0.1:PORT, with database bench.
node_start() {
  local d="$work/$1"
  as_pg "$bindir/initdb" -D "$d" -A trust >/dev/null
  cat >> "$d/postgresql.conf" <<CONF
port = $2
listen_addresses = '127.0.0.1'
unix_socket_directories = '$work'
shared_preload_libraries = '$3'
idemgate.database = 'bench'
max_connections = 100
max_worker_processes = 16
max_prepared_transactions = 50
wal_level = logical
shared_buffers = 128MB
max_wal_size = 2GB
synchronous_commit = $SYNC
autovacuum = off
CONF
  [ -n "${POLL:-}" ] && echo "idemgate.poll_interval = '$POLL'" >> "$d/postgresql.conf"
  [ -n "${LOCAL_SHARDS:-}" ] && echo "idemgate.citus_local_shards = $LOCAL_SHARDS" >> "$d/postgresql.conf"
  case $3 in
    citus*) cat >> "$d/postgresql.conf" <<CONF
citus.node_conninfo = 'sslmode=disable'
citus.enable_statistics_collection = off
CONF
  esac
  datadirs+=("$d")
  as_pg "$bindir/pg_ctl" -D "$d" -l "$work/$1.log" -w -t 60 start >/dev/null
  DB=postgres q "$2" "CREATE DATABASE bench" >/dev/null
}

node_stop() { as_pg "$bindir/pg_ctl" -D "$work/$1" -m fast -w stop >/dev/null; }

# node_ticks NAME: CPU clock ticks (user + system) of every process of the
# cluster, as "DISPATCHERS,OTHERS": the idemgate dispatchers, and the rest
# (the postmaster with the children it reaped, backends, background
# processes, each with its own reaped children).
node_ticks() {
  local pm p disp=() rest=()
  pm=$(head -1 "$work/$1/postmaster.pid")
  rest+=("/proc/$pm/stat")
  while read -r p args; do
    case $args in
      *"idemgate dispatcher"*) disp+=("/proc/$p/stat") ;;
      *) rest+=("/proc/$p/stat") ;;
    esac
  done < <(ps --ppid "$pm" -o pid=,args=)
  printf '%s,%s\n' "$(sum_ticks "${disp[@]}")" "$(sum_ticks "${rest[@]}")"
}
sum_ticks() {
  [ $# -gt 0 ] || { echo 0; return; }
  awk '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { print t + 0 }' "$@" 2>/dev/null
}

# ticks_all: "name=disp,rest ..." for the nodes of the setup ($names).
ticks_all() { local n; for n in $names; do printf '%s=%s ' "$n" "$(node_ticks "$n")"; done; echo; }

now() { date +%s.%N; }

# record PHASE OPS T0 T1 "BEFORE" "AFTER": one line per node into
# $work/cpu.tsv: setup, phase, node, operations, seconds, then the CPU ms
# of the dispatchers and of the other processes over the phase.
record() {
  local n b a
  for n in $names; do
    b=$(tr ' ' '\n' <<< "$5" | sed -n "s/^$n=//p")
    a=$(tr ' ' '\n' <<< "$6" | sed -n "s/^$n=//p")
    awk -v s="$setup" -v p="$1" -v n="$n" -v ops="$2" -v t0="$3" -v t1="$4" -v b="$b" -v a="$a" -v hz="$TICKS" \
      'BEGIN { split(b, x, ","); split(a, y, ",");
               printf "%s\t%s\t%s\t%d\t%.3f\t%.1f\t%.1f\n", s, p, n, ops, t1 - t0,
                      (y[1] - x[1]) * 1000 / hz, (y[2] - x[2]) * 1000 / hz }' >> "$work/cpu.tsv"
  done
}

# cpu_line PHASE: "node X ms/op (dispatchers Y) ..." of this setup's PHASE.
cpu_line() {
  awk -v s="$setup" -v p="$1" '$1 == s && $2 == p {
      printf "%s %.3f ms/op (others %.3f, dispatchers %.3f)  ", $3, ($6 + $7) / $4, $7 / $4, $6 / $4 }' "$work/cpu.tsv"
}

pgbench_run() {	# pgbench_run SCRIPT TOTAL → "tps"
  local per=$(( $2 / CLIENTS ))
  as_pg "$bindir/pgbench" -h 127.0.0.1 -p "$cport" -n -M prepared -c "$CLIENTS" -j 2 -t "$per" \
      -f "$work/$1" bench > "$work/pgbench.out" 2>&1 || {
    echo "bench/citus: pgbench $1 failed on port $cport:" >&2; grep -m3 -i -E "error|abort" "$work/pgbench.out" >&2; exit 1; }
  awk '/^tps = / { printf "%.0f\n", $3 }' "$work/pgbench.out"
}

sink_requests() { curl -s "$sink_url/__stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }

# port_of NAME: the port of node NAME of this setup.
port_of() { case $1 in worker*) echo $((PORT + ${1#worker})) ;; *) echo "$PORT" ;; esac; }

# per_worker TABLE WHERE: "workerN=count ..." of TABLE's rows matching WHERE,
# per worker, from per-shard counts and the placements (citus_shards leaves
# out tables that belong to an extension).
per_worker() {
  q "$PORT" "SELECT string_agg('worker' || (s.nodeport - $PORT) || '=' || s.n, ' ' ORDER BY s.nodeport)
      FROM (SELECT n.nodeport, sum(r.result::bigint) AS n
              FROM run_command_on_shards('$1', \$c\$SELECT count(*) FROM %s WHERE $2\$c\$) r
              JOIN pg_dist_placement pl USING (shardid)
              JOIN pg_dist_node n USING (groupid)
             GROUP BY n.nodeport) s"
}

# settle: VACUUM ANALYZE and CHECKPOINT on every node (autovacuum is off,
# so that it does not fall into a measured window).
settle() { local n; for n in $names; do q "$(port_of "$n")" "VACUUM ANALYZE" >/dev/null; q "$(port_of "$n")" "CHECKPOINT" >/dev/null; done; }

cp "$here/claim.sql" "$here/enqueue.sql" "$root/bench/claim/baseline.sql" "$work"/ && chown postgres "$work"/*.sql
cc -O2 -o "$work/sink" "$root/test/sink/sink.c"
"$work/sink" --port 0 --port-file "$work/sink.port" --log "$work/sink.jsonl" --max-seconds "$TIMEOUT" --quiet &
sink_pid=$!
for _ in $(seq 100); do [ -s "$work/sink.port" ] && break; sleep 0.1; done
sink_url="http://127.0.0.1:$(cat "$work/sink.port")"

echo "bench/citus: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  CLAIMS=$CLAIMS DELIVERIES=$DELIVERIES CLIENTS=$CLIENTS SHARDS=$SHARDS SYNC=$SYNC POLL=${POLL:-default} LOCAL_SHARDS=${LOCAL_SHARDS:-default}"
: > "$work/cpu.tsv"; : > "$work/count.tsv"; : > "$work/times.tsv"
for setup in $SETUPS; do
  cport=$PORT
  if [ "$setup" = single ]; then
    names="node"
    node_start node "$PORT" idemgate
    q "$PORT" "CREATE EXTENSION idemgate" >/dev/null
  else
    names="coordinator"
    node_start coordinator "$PORT" citus,idemgate
    for w in $(seq "$setup"); do
      names+=" worker$w"
      node_start "worker$w" $((PORT + w)) citus,idemgate
    done
    for n in $names; do q "$(port_of "$n")" "CREATE EXTENSION citus" >/dev/null; done
    q "$PORT" "SELECT citus_set_coordinator_host('127.0.0.1', $PORT)" >/dev/null
    for w in $(seq "$setup"); do q "$PORT" "SELECT citus_add_node('127.0.0.1', $((PORT + w)))" >/dev/null; done
    q "$PORT" "CREATE EXTENSION idemgate" >/dev/null
    q "$PORT" "SELECT idemgate.distribute($SHARDS)" >/dev/null
  fi
  # Every node's dispatcher running (the coordinator's too: it delivers nothing).
  for _ in $(seq 300); do
    [ "$(q "$PORT" "SELECT count(*) FROM idemgate.dispatcher_status()")" -ge "$(wc -w <<< "$names")" ] && break
    sleep 0.2
  done
  q "$PORT" "SELECT idemgate.register_endpoint('bench', '$sink_url/ok?setup=$setup', '10 seconds')" >/dev/null
  settle

  # Idle: what each node spends with nothing to do (the coordinator reads
  # the alerts every 30 s, some statements on every shard, and the workers
  # sweep their shards every 10 s: the default IDLE_SECS=30 counts one of
  # each in its share; a shorter window may miss the alerts).
  b=$(ticks_all); t0=$(now); sleep "$IDLE_SECS"; t1=$(now); a=$(ticks_all)
  record idle 1 "$t0" "$t1" "$b" "$a"
  echo "[$setup] idle CPU ms/s: $(awk -v s="$setup" '$1 == s && $2 == "idle" { printf "%s %.0f (dispatchers %.0f)  ", $3, ($6 + $7) / $5, $6 / $5 }' "$work/cpu.tsv")"

  # Claims.
  settle
  b=$(ticks_all); t0=$(now); tps=$(pgbench_run claim.sql "$CLAIMS"); t1=$(now); a=$(ticks_all)
  ops=$(( CLAIMS / CLIENTS * CLIENTS ))
  record claim "$ops" "$t0" "$t1" "$b" "$a"
  if [ "$setup" = single ]; then
    rows="node=$(q "$PORT" "SELECT count(*) FROM idemgate.runs")"
  else
    rows=$(per_worker idemgate.runs true)
  fi
  for kv in $rows; do printf '%s\tclaim\t%s\t%s\n' "$setup" "${kv%%=*}" "${kv#*=}" >> "$work/count.tsv"; done
  echo "[$setup] claims: $ops in $(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.1f", y - x }') s ($tps tps); runs per node: $rows"
  echo "[$setup]   CPU per claim: $(cpu_line claim)"

  # The seed's statement on a plain table, what a user would pick instead:
  # bench/claim/baseline.sql (INSERT ... ON CONFLICT ... RETURNING) on
  # bench_runs, the columns of idemgate.runs with its primary key only; on
  # Citus distributed by the key over SHARDS shards, through the
  # coordinator. Citus's own cost for a routed write, the floor under a
  # claim's.
  q "$PORT" "CREATE TABLE public.bench_runs (LIKE idemgate.runs INCLUDING DEFAULTS, PRIMARY KEY (idempotency_key));
             ALTER TABLE public.bench_runs DROP COLUMN IF EXISTS bucket" >/dev/null
  [ "$setup" = single ] || q "$PORT" "SELECT create_distributed_table('public.bench_runs', 'idempotency_key',
                                        shard_count => $SHARDS, colocate_with => 'none')" >/dev/null
  settle
  b=$(ticks_all); t0=$(now); stps=$(pgbench_run baseline.sql "$CLAIMS"); t1=$(now); a=$(ticks_all)
  record seed "$(( CLAIMS / CLIENTS * CLIENTS ))" "$t0" "$t1" "$b" "$a"
  echo "[$setup] the seed's statement on a plain table: $(( CLAIMS / CLIENTS * CLIENTS )) in $(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.1f", y - x }') s ($stps tps)"
  echo "[$setup]   CPU per statement: $(cpu_line seed)"

  # Claims sent to the workers instead (Citus syncs the metadata to every
  # node): the same count, split over one pgbench per worker, at once.
  if [ "$setup" != single ]; then
    settle
    wclients=$(( CLIENTS / setup > 0 ? CLIENTS / setup : 1 ))
    b=$(ticks_all); t0=$(now); pids=()
    for w in $(seq "$setup"); do
      as_pg "$bindir/pgbench" -h 127.0.0.1 -p $((PORT + w)) -n -M prepared -c "$wclients" -j 1 \
          -t $(( CLAIMS / setup / wclients )) -f "$work/claim.sql" bench > "$work/pgbench.w$w.out" 2>&1 &
      pids+=($!)
    done
    wait_ok=1
    for p in "${pids[@]}"; do wait "$p" || wait_ok=0; done
    t1=$(now); a=$(ticks_all)
    [ "$wait_ok" = 1 ] || { echo "bench/citus: pgbench against the workers failed:" >&2; cat "$work"/pgbench.w*.out >&2; exit 1; }
    ops=$(( CLAIMS / setup / wclients * wclients * setup ))
    record wclaim "$ops" "$t0" "$t1" "$b" "$a"
    echo "[$setup] claims sent to the workers: $ops in $(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.1f", y - x }') s"
    echo "[$setup]   CPU per claim: $(cpu_line wclaim)"
  fi

  # Deliveries: a backlog made with the switch off, then delivered.
  q "$PORT" "SELECT idemgate.set_actions_enabled(false, 'bench', 'build backlog')" >/dev/null
  pgbench_run enqueue.sql "$DELIVERIES" >/dev/null
  pending=$(q "$PORT" "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'bench' AND state = 'pending'")
  before=$(q "$PORT" "SELECT COALESCE(node, 'local') || '=' || completed FROM idemgate.dispatcher_status()" | tr '\n' ' ')
  settle
  req0=$(sink_requests)
  b=$(ticks_all); t0=$(now)
  q "$PORT" "SELECT idemgate.set_actions_enabled(true, 'bench', 'go')" >/dev/null
  deadline=$(( $(date +%s) + 300 ))
  while [ $(( $(sink_requests) - req0 )) -lt "$pending" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  while [ "$(q "$PORT" "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'bench' AND state = 'completed'")" -lt "$pending" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "bench/citus: [$setup] deliveries not all completed in 300 s" >&2; break; }
    sleep 0.1
  done
  t1=$(now); a=$(ticks_all)
  record deliver "$pending" "$t0" "$t1" "$b" "$a"
  printf '%s\t%s\t%s\n' "$setup" "$t0" "$t1" >> "$work/times.tsv"
  after=$(q "$PORT" "SELECT COALESCE(node, 'local') || '=' || completed FROM idemgate.dispatcher_status()" | tr '\n' ' ')
  # Completed per node (dispatcher counters), the node named by its port.
  delivered=$(python3 - "$before" "$after" "$PORT" <<'EOF'
import sys
def parse(s):
    d = {}
    for kv in s.split():
        k, v = kv.rsplit('=', 1)
        d[k] = d.get(k, 0) + int(v)
    return d
b, a, base = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
out = []
for k in sorted(a):
    port = int(k.rsplit(':', 1)[1]) if ':' in k else None
    name = 'node' if port is None else ('coordinator' if port == base else 'worker%d' % (port - base))
    out.append('%s=%d' % (name, a[k] - b.get(k, 0)))
print(' '.join(out))
EOF
)
  for kv in $delivered; do printf '%s\tdeliver\t%s\t%s\n' "$setup" "${kv%%=*}" "${kv#*=}" >> "$work/count.tsv"; done
  stored=
  [ "$setup" = single ] || stored=$(per_worker idemgate.outbox "effect_type = 'bench' AND state = 'completed'")
  echo "[$setup] deliveries: $pending in $(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.1f", y - x }') s; completed per dispatcher node: $delivered${stored:+; completed effects stored per worker: $stored}"
  echo "[$setup]   CPU per delivery: $(cpu_line deliver)"

  for n in $names; do node_stop "$n"; done
  for n in $names; do rm -rf "${work:?}/$n"; done
  datadirs=()
done
dup=$(curl -s "$sink_url/__stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keys_2xx_more_than_once"])')
echo "keys delivered more than once (all setups): $dup"

python3 "$here/report.py" "$work"
