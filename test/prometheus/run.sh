#!/usr/bin/env bash
# test/prometheus/run.sh — monitoring/prometheus tested with the real tools.
#
# Runs as the postgres user (scripts/test.sh calls it) against the
# installed extension:
#   1. a throw-away cluster on 127.0.0.1 (random port) with idemgate
#      preloaded and password authentication over TCP, a scripted state
#      (backlog per type, a completed and a dead-lettered effect, an unknown
#      one, a paused type, stuck effects, the kill switch off), and a login
#      role with a password holding only the reader bundle, made as
#      docs/operations.md says;
#   2. Debian's prometheus-postgres-exporter (0.11) with
#      --extend.query-path=monitoring/prometheus/queries.yaml on 127.0.0.1 and
#      a DATA_SOURCE_NAME of the form docs/operations.md gives, scraped with
#      curl: the idemgate series, their labels and values; promtool check
#      metrics on prometheus() and on the exporter's idemgate series;
#   3. promtool check rules and promtool test rules (every alert fires);
#   4. the Grafana dashboard parses and every query names a series the
#      exporter produced.
# Every process it starts is stopped on exit. Prints "N passed, M failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
monitoring="$root/monitoring/prometheus"
bindir=$(${PG_CONFIG:-pg_config} --bindir)
tmp=$(mktemp -d /tmp/idemgate-prom.XXXXXX)
passed=0; failed=0
exporter_pid=
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
cleanup() {
  [ -n "$exporter_pid" ] && kill "$exporter_pid" 2>/dev/null && wait "$exporter_pid" 2>/dev/null
  [ -f "$tmp/data/postmaster.pid" ] && "$bindir/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# 1. The cluster.
pgport=$(free_port)
"$bindir/initdb" -D "$tmp/data" -A scram-sha-256 --auth-local=trust -U postgres >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log"; not_ok "initdb"; echo "$passed passed, $failed failed"; exit 1; }
cat >>"$tmp/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $pgport
unix_socket_directories = '$tmp'
shared_preload_libraries = 'idemgate'
idemgate.database = 'idemgate_prom'
idemgate.poll_interval = 200
CONF
if ! "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w start >/dev/null; then
  cat "$tmp/server.log"; not_ok "cluster starts"; echo "$passed passed, $failed failed"; exit 1
fi
ok "cluster starts on 127.0.0.1:$pgport"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp" -p "$pgport" -U postgres "$@"; }
psql -d postgres -c 'CREATE DATABASE idemgate_prom'
secret=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
# The scripted state. Types without an endpoint are pull-API types: the
# dispatcher never touches them, so the figures stay put.
#   prom_mail:  3 pending (one created 20 minutes ago and due since then:
#               stuck), 1 completed, 1 failed (dead letter)
#   prom_sms:   1 unknown, paused
#   prom_"odd\type: 1 pending (label escaping)
if ! psql -d idemgate_prom -v secret="$secret" >"$tmp/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION idemgate;
CREATE ROLE prom_reader LOGIN PASSWORD :'secret';
SELECT idemgate.grant_role('prom_reader', 'reader');
CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  PERFORM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 't' || g, 'payload', '{}')) FROM generate_series(1, n) g));
END $$;
SELECT pg_temp.mk('prom-1', 'prom_mail', 5);
SELECT pg_temp.mk('prom-2', 'prom_sms', 1);
SELECT pg_temp.mk('prom-3', 'prom_"odd\type', 1);
SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM idemgate.claim_effects('prom_mail', 1);
SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', 'HTTP 400') FROM idemgate.claim_effects('prom_mail', 1);
SELECT idemgate.fail_effect(effect_id, lease_owner, 'server_error', 'HTTP 500') FROM idemgate.claim_effects('prom_sms', 1);
UPDATE idemgate.outbox SET created_at = now() - interval '20 minutes', next_attempt_at = now() - interval '20 minutes'
 WHERE effect_type = 'prom_mail' AND target = 't3';
SELECT idemgate.pause_effect_type('prom_sms', 'ops', 'provider incident');
SELECT idemgate.set_actions_enabled(false, 'ops', 'drill');

SQL
then cat "$tmp/setup.log"; not_ok "scripted state"; else ok "scripted state"; fi
# The dispatcher of idemgate_prom is up (the launcher waits for the database).
for _ in $(seq 1 100); do
  [ "$(psql -d idemgate_prom -At -c 'SELECT count(*) FROM idemgate.dispatcher_status()')" = 1 ] && break
  sleep 0.1
done
# What idemgate.prometheus() says, as the same reader.
PGPASSWORD=$secret "$bindir/psql" -X -At -h 127.0.0.1 -p "$pgport" -U prom_reader -d idemgate_prom \
  -c 'SELECT idemgate.prometheus()' >"$tmp/function.prom" 2>"$tmp/function.err"
check "prometheus() as the reader (password over TCP)" test -s "$tmp/function.prom"
# promtool lints the exposition: types, names, reserved labels (a
# "quantile" label outside a summary is a finding). No output = clean.
promtool check metrics <"$tmp/function.prom" >"$tmp/lint-function.log" 2>&1
if [ $? -eq 0 ] && [ ! -s "$tmp/lint-function.log" ]; then ok "promtool check metrics: prometheus() is clean"
else cat "$tmp/lint-function.log"; not_ok "promtool check metrics: prometheus() is clean"; fi

# 2. The exporter, scraped with curl.
eport=$(free_port)
DATA_SOURCE_NAME="postgresql://prom_reader:$secret@127.0.0.1:$pgport/idemgate_prom?sslmode=disable" \
  prometheus-postgres-exporter --disable-default-metrics --disable-settings-metrics \
    --extend.query-path="$monitoring/queries.yaml" --web.listen-address="127.0.0.1:$eport" \
    >"$tmp/exporter.log" 2>&1 &
exporter_pid=$!
scraped=false
for _ in $(seq 1 50); do
  if curl -sf --max-time 5 "http://127.0.0.1:$eport/metrics" >"$tmp/exporter.prom" 2>/dev/null &&
     grep -q '^idemgate_effects_pending' "$tmp/exporter.prom"; then scraped=true; break; fi
  sleep 0.2
done
check "exporter scraped with curl on 127.0.0.1:$eport" $scraped
$scraped || { tail -20 "$tmp/exporter.log"; tail -20 "$tmp/exporter.prom" 2>/dev/null; }
# The same lint on the exporter's idemgate families (its own go_*/pg_*
# families are the exporter's business).
grep -E '^(# (HELP|TYPE) )?idemgate_' "$tmp/exporter.prom" >"$tmp/exporter-idemgate.prom"
promtool check metrics <"$tmp/exporter-idemgate.prom" >"$tmp/lint-exporter.log" 2>&1
if [ $? -eq 0 ] && [ ! -s "$tmp/lint-exporter.log" ] && [ -s "$tmp/exporter-idemgate.prom" ]; then
  ok "promtool check metrics: the exporter's idemgate series are clean"
else cat "$tmp/lint-exporter.log"; not_ok "promtool check metrics: the exporter's idemgate series are clean"; fi

# Compare: expected samples (name, labels, value) must be in the scrape;
# and every per-type, dispatcher and alert sample of prometheus() has the
# same value in the scrape (labels compared without the exporter's own).
if python3 - "$tmp/exporter.prom" "$tmp/function.prom" >"$tmp/compare.log" 2>&1 <<'PY'
import re, sys
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
def parse(path):
    out = {}
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        if not line or line.startswith('#'):
            continue
        m = line_re.match(line)
        if not m:
            continue
        labels = dict((k, v.replace('\\"', '"').replace('\\\\', '\\').replace('\\n', '\n'))
                      for k, v in label_re.findall(m.group(3) or ''))
        labels.pop('server', None)      # the exporter's own label
        out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(4))
    return out
exp, fn = parse(sys.argv[1]), parse(sys.argv[2])
fails = 0
def want(name, labels, value):
    global fails
    key = (name, tuple(sorted(labels.items())))
    got = exp.get(key)
    ok = got is not None and (got == value if value is not None else True)
    print(('ok' if ok else 'FAIL'), name, labels, 'want', value, 'got', got)
    fails += 0 if ok else 1
T = lambda t: {'effect_type': t}
want('idemgate_effects_pending', T('prom_mail'), 3)
want('idemgate_effects_pending', T('prom_sms'), 0)
want('idemgate_effects_pending', T('prom_"odd\\type'), 1)
want('idemgate_effects_unknown', T('prom_sms'), 1)
want('idemgate_effects_completed_total', T('prom_mail'), 1)
want('idemgate_effects_failed_total', T('prom_mail'), 1)
want('idemgate_effects_failed_total', T('prom_sms'), 0)
want('idemgate_effects_paused', T('prom_sms'), 1)
want('idemgate_effects_paused', T('prom_mail'), 0)
want('idemgate_dispatchers_running', {}, 1)
want('idemgate_actions_enabled', {}, 0)
want('idemgate_dead_letters_open', {}, 1)
want('idemgate_unknown_effects', {}, 1)
want('idemgate_alerts_firing', {'alert': 'kill_switch_off', 'severity': 'info', 'subject': 'kill_switch'}, 1)
want('idemgate_alerts_firing', {'alert': 'type_paused', 'severity': 'info', 'subject': 'effect_type:prom_sms'}, 0)
want('idemgate_alerts_firing', {'alert': 'unknown_effects', 'severity': 'warning', 'subject': 'effect_type:prom_sms'}, 1)
want('idemgate_alerts_firing', {'alert': 'stuck_effects', 'severity': 'warning', 'subject': 'effect_type:prom_mail'}, 1)
want('idemgate_duplicate_rate', {'window': '7d'}, 0)
want('idemgate_approval_wait_p50_seconds', {'window': '7d'}, None)
want('idemgate_approval_wait_p95_seconds', {'window': '7d'}, None)
old = [k for k in exp if k[0] == 'idemgate_effects_oldest_pending_seconds' and dict(k[1]).get('effect_type') == 'prom_mail']
ok = len(old) == 1 and 1190 <= exp[old[0]] <= 1500
print('ok' if ok else 'FAIL', 'oldest pending of prom_mail about 20 minutes:', [exp[k] for k in old]); fails += 0 if ok else 1
# Same values as prometheus() for the series both have (the oldest age moves with the clock).
shared = [k for k in fn if k in exp and k[0] not in ('idemgate_effects_oldest_pending_seconds',
                                                    'idemgate_oldest_dead_letter_age_seconds')]
diff = [(k, fn[k], exp[k]) for k in shared if not (fn[k] == exp[k] or (fn[k] != fn[k] and exp[k] != exp[k]))]
per_type = [k for k in fn if k[0].startswith(('idemgate_effects_', 'idemgate_dispatchers_', 'idemgate_alerts_',
                                                'idemgate_run_'))]
missing = [k for k in per_type if k not in exp]
print('shared series:', len(shared), 'differing:', diff, 'per-type/alert series missing from the exporter:', missing)
fails += 1 if diff or missing or len(shared) < 20 else 0
sys.exit(1 if fails else 0)
PY
then ok "exporter series, labels and values (= prometheus())"; else cat "$tmp/compare.log"; not_ok "exporter series, labels and values (= prometheus())"; fi
grep -c '^ok' "$tmp/compare.log" | sed 's/^/  samples checked: /'

# 3. Alerting rules.
if promtool check rules "$monitoring/idemgate-rules.yml" >"$tmp/check.log" 2>&1; then ok "promtool check rules"; else cat "$tmp/check.log"; not_ok "promtool check rules"; fi
if (cd "$monitoring" && promtool test rules idemgate-rules.test.yml) >"$tmp/ruletest.log" 2>&1; then ok "promtool test rules"; else cat "$tmp/ruletest.log"; not_ok "promtool test rules"; fi
# Every alert of the alerts view has a rule, and a unit test that fires it.
if python3 - "$monitoring" >"$tmp/coverage.log" 2>&1 <<'PY'
import re, sys
d = sys.argv[1]
rules = open(d + '/idemgate-rules.yml').read()
tests = open(d + '/idemgate-rules.test.yml').read()
alerts = ['failure_rate', 'dead_letters', 'unknown_effects', 'silence',
          'stuck_effects', 'dispatcher_missing', 'kill_switch_off', 'type_paused',
          'stalled_runs', 'terminal_failure', 'lease_takeovers', 'payload_mismatch',
          'endpoint_down']
bad = 0
for a in alerts:
    m = re.search(r'- alert: (\w+)\n\s+expr: [^\n]*alert="%s"' % a, rules)
    name = m.group(1) if m else None
    fired = name is not None and re.search(r'alertname: %s\n\s+exp_alerts:\n\s+- exp_labels' % name, tests)
    print(a, name, 'tested' if fired else 'NOT TESTED')
    bad += 0 if fired else 1
if not re.search(r'alertname: IdemgateExporterDown\n\s+exp_alerts:\n\s+- exp_labels', tests):
    print('IdemgateExporterDown NOT TESTED'); bad += 1
sys.exit(bad)
PY
then ok "a rule and a firing unit test per alert (and exporter down)"; else cat "$tmp/coverage.log"; not_ok "a rule and a firing unit test per alert (and exporter down)"; fi

# 4. The dashboard.
if python3 - "$monitoring/idemgate-dashboard.json" "$tmp/exporter.prom" >"$tmp/dashboard.log" 2>&1 <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
scraped = set(re.findall(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]', open(sys.argv[2]).read(), re.M))
exprs = []
def walk(o):
    if isinstance(o, dict):
        if 'expr' in o:
            exprs.append(o['expr'])
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(dash)
bad = 0
for e in exprs:
    names = set(re.findall(r'\b(idemgate_[a-z0-9_]+)\b', e))
    missing = [n for n in names if n not in scraped]
    if not names or missing:
        print('BAD', e, 'missing:', missing); bad += 1
print(len(exprs), 'queries,', bad, 'bad')
sys.exit(1 if bad or len(exprs) < 8 else 0)
PY
then ok "dashboard parses, every query names a scraped series"; else cat "$tmp/dashboard.log"; not_ok "dashboard parses, every query names a scraped series"; fi
tail -1 "$tmp/dashboard.log" | sed 's/^/  /'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
