#!/usr/bin/env python3
"""bench/soak/soak.py — the soak's driver and checker (started by run.sh).

run.sh has made a throw-away cluster (database soak, idemgate preloaded,
two dispatchers), started the loopback sink and registered the endpoints.
This program, for --minutes:

  load     pgbench clients: automatic runs (claim + enqueue_effect) and
           approved runs (claim, request_approval, consume_approval;
           some rejected, some left to expire), restarted after a crash;
  faults   at random moments: SIGKILL or SIGTERM a dispatcher, SIGKILL
           the postmaster (and start it again), kill switch off for a few
           seconds, a type paused for a few seconds, purge, reinject_all,
           cancel_effect/cancel_approval, resolve_effect of unknown effects
           by what the sink says (the operator's procedure);
  checks   continuously: the outbox is read every 2 s (every state an
           effect passes through before purge can take it), the sink log
           as it grows, the dispatchers' memory every 10 s;

then drains (no load, no faults, switch on, types resumed; waits until
nothing is pending or sending), reads everything once more and judges:

  lost        an effect completed without a 2xx at the sink, or one that
              should have been delivered by its final state (pending or
              sending after the drain, or gone by purge without a
              settled state) and the sink never answered 2xx;
  duplicated  an effect of a non-idempotent endpoint (honors_idempotency_key
              false) that reached the sink again after an answer the
              provider may have acted on: anything but a complete 400,
              429, 502, 503 or 504 (so after a 2xx, a 500, a drop, a
              reset, a response cut off mid-body, an answer after the
              timeout), unless the soak itself had sanctioned a re-send
              of it in between (resolve_effect "not delivered",
              reinject_all of its dead letter; a 2xx is never excused);
  held        a request whose first byte reached the sink (kernel receive
              time) while the kill switch was off, its type paused, or
              after its effect was cancelled;
  recovered   every fault was followed by a working cluster and both
              dispatchers within 90 s;
  drained     nothing pending or sending after the drain;
  runs        no run left 'approved' with all its effects completed or
              cancelled.

Prints the sink's answers per type and kind (status, drop, reset,
partial, abandoned), each duplicate with its requests, "ok - ..." /
"not ok - ..." per check, "N passed, M failed", and
last "soak: N min, E effects, L lost, D duplicated to non-idempotent
endpoints, RSS a→b MB, p99 p ms".
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument('--minutes', type=float, required=True)
ap.add_argument('--dir', required=True)
ap.add_argument('--port', required=True)
ap.add_argument('--pgbin', required=True)
ap.add_argument('--data', required=True)
ap.add_argument('--sink-log', required=True)
ap.add_argument('--sink-pid', type=int, required=True)
ap.add_argument('--seed', type=int, default=None)
ap.add_argument('--faults', default='on')
ap.add_argument('--rate', type=float, default=30.0)
ap.add_argument('--approval-rate', type=float, default=5.0)
ap.add_argument('--fault-gap', type=float, default=8.0)
ap.add_argument('--drain-secs', type=float, default=150.0)
ap.add_argument('--purge-after', default='2 minutes')
A = ap.parse_args()

SEED = A.seed if A.seed is not None else int(time.time())
rnd = random.Random(SEED)
PLAIN = {'plain', 'steady', 'flaky'}	# honors_idempotency_key false
# Complete answers that say the provider did not act: after one of these
# a non-idempotent endpoint may get the effect again (400: through the
# dead letter and its reinjection).
REFUSALS = {400, 429, 502, 503, 504}
TYPES = ['plain', 'idem', 'steady', 'flaky']	# flaky: outage windows (run.sh)
T0 = time.time()


def log(msg):
	print('[%7.1fs] %s' % (time.time() - T0, msg), flush=True)


def psql(sql, db='soak', timeout=60):
	"""Runs sql; returns rows (lists of str). Raises on any error."""
	r = subprocess.run(
		[A.pgbin + '/psql', '-X', '-qAt', '-F', '\t', '-v', 'ON_ERROR_STOP=1',
		 '-h', A.dir, '-p', A.port, '-U', 'postgres', '-d', db, '-c', sql],
		capture_output=True, text=True, timeout=timeout)
	if r.returncode != 0:
		raise RuntimeError(r.stderr.strip()[:300])
	return [l.split('\t') for l in r.stdout.splitlines() if l != '']


def try_psql(sql, **kw):
	try:
		return psql(sql, **kw)
	except Exception as e:	# the cluster may be down: a fault
		return None


# ------------------------------------------------------------------ load

AUTO_SQL = """\\set t random(1, 100)
SELECT e.version FROM idemgate.claim('soak-' || gen_random_uuid(), '{"kind": "auto"}') c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    CASE WHEN :t <= 40 THEN '[{"type": "plain", "target": "a", "payload": {"n": 1}}]'::jsonb
         WHEN :t <= 70 THEN '[{"type": "idem", "target": "a", "payload": {"n": 1}}]'::jsonb
         WHEN :t <= 85 THEN '[{"type": "plain", "target": "a", "payload": {}}, {"type": "idem", "target": "b", "payload": {}}]'::jsonb
         WHEN :t <= 93 THEN '[{"type": "steady", "target": "a", "payload": {}}]'::jsonb
         ELSE '[{"type": "flaky", "target": "a", "payload": {}}]'::jsonb END) e;
"""

APPROVAL_SQL = """\\set d random(1, 20)
SELECT c.idempotency_key AS k, c.lease_owner AS o, c.version AS v FROM idemgate.claim('soak-a-' || gen_random_uuid(), '{"kind": "approval"}') c \\gset
\\if :d = 1
SELECT token AS tok FROM idemgate.request_approval(:k, :o, :v, '[{"type": "plain", "target": "a", "payload": {}}]', '5 seconds') \\gset
\\else
SELECT token AS tok FROM idemgate.request_approval(:k, :o, :v, '[{"type": "plain", "target": "a", "payload": {}}, {"type": "idem", "target": "b", "payload": {}}]', '10 minutes') \\gset
\\if :d = 2
SELECT outcome FROM idemgate.consume_approval(:tok, 'reject', 'approver');
\\else
SELECT outcome FROM idemgate.consume_approval(:tok, 'approve', 'approver');
\\endif
\\endif
"""

for name, body in (('auto.sql', AUTO_SQL), ('approval.sql', APPROVAL_SQL)):
	with open(os.path.join(A.dir, name), 'w') as f:
		f.write(body)
	os.chmod(os.path.join(A.dir, name), 0o644)

END = T0 + A.minutes * 60
loaders = {}		# name -> Popen
loader_starts = 0
loader_errors = 0


def start_loader(name, script, rate):
	global loader_starts
	left = int(END - time.time())
	if left < 2:
		return
	errf = open(os.path.join(A.dir, name + '.err'), 'a')
	loaders[name] = subprocess.Popen(
		['runuser', '-u', 'postgres', '--', A.pgbin + '/pgbench', '-n', '-M', 'extended',
		 '-h', A.dir, '-p', A.port, '-U', 'postgres', '-c', '1', '-j', '1',
		 '-R', str(rate), '-T', str(left), '-f', os.path.join(A.dir, script), 'soak'],
		stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True)
	loader_starts += 1


def tend_loaders(cluster_up):
	"""Restarts a pgbench that ended early (its connection died in a crash)."""
	for name, script, rate in (('auto1', 'auto.sql', A.rate / 2), ('auto2', 'auto.sql', A.rate / 2),
							   ('approval', 'approval.sql', A.approval_rate)):
		p = loaders.get(name)
		if p is not None and p.poll() is None:
			continue
		if cluster_up and time.time() < END - 2:
			start_loader(name, script, rate)


def stop_loaders():
	for p in loaders.values():
		if p.poll() is None:
			try:
				os.killpg(p.pid, signal.SIGINT)
			except ProcessLookupError:
				pass
	for p in loaders.values():
		try:
			p.wait(timeout=10)
		except subprocess.TimeoutExpired:
			os.killpg(p.pid, signal.SIGKILL)
			p.wait()


# ---------------------------------------------------------------- state

effects = {}		# effect_id -> dict(key, type, state, upd, created, seen_gone)
sink = {}			# effect_id -> list of (n, rx, status, type)
sink_fault = {}		# (effect_id, n) -> drop, reset, partial or abandoned (status 0)
answers = {}		# (type, status or fault) -> requests
sink_off = 0
sink_partial = ''
sanctioned = {}		# effect_id -> set of times the soak made it be sent again
last_reinject_from = 0.0
windows = []		# (start, end, type or None): nothing may reach the sink inside
cancelled_at = {}	# effect_id -> time the cancel committed (upper bound of its start)
faults = {}			# name -> count
unrecovered = []
rss = []			# (t, {pid: (RssAnon kB, VmRSS kB)})
last_poll_from = 0.0


def read_sink():
	"""Reads what the sink logged since the last call."""
	global sink_off, sink_partial
	try:
		with open(A.sink_log, 'r', errors='replace') as f:
			f.seek(sink_off)
			data = f.read()
			sink_off = f.tell()
	except FileNotFoundError:
		return
	data = sink_partial + data
	lines = data.split('\n')
	sink_partial = lines.pop()
	for line in lines:
		if not line:
			continue
		try:
			r = json.loads(line)
		except ValueError:
			continue
		k = r.get('idempotency_key')
		if not k:
			continue
		body = r.get('body') if isinstance(r.get('body'), dict) else {}
		sink.setdefault(k, []).append(
			(r['n'], r.get('rx', r['t']), r['status'], body.get('effect_type')))
		kind = str(r['status'])
		if r['status'] == 0:
			kind = r.get('fault') or '0'
			sink_fault[(k, r['n'])] = kind
		a = (body.get('effect_type'), kind)
		answers[a] = answers.get(a, 0) + 1


def show(eid):
	"""The sink's requests of one effect: number, answer, first byte's time."""
	return ', '.join('n=%d %s at %.3f' % (n, sink_fault.get((eid, n)) or s, rx)
					 for (n, rx, s, _) in sink.get(eid, []))


def poll_outbox(full=False):
	"""Reads the effects changed since the last poll (30 s overlap)."""
	global last_poll_from
	start = time.time()
	where = '' if full else "WHERE o.updated_at >= to_timestamp(%f)" % (last_poll_from - 30)
	rows = try_psql("""SELECT o.effect_id, o.idempotency_key, o.effect_type, o.state,
		extract(epoch FROM o.updated_at), coalesce(extract(epoch FROM r.created_at), 0)
		FROM idemgate.outbox o LEFT JOIN idemgate.runs r USING (idempotency_key) %s""" % where)
	if rows is None:
		return False
	ids = set()
	for eid, key, typ, state, upd, created in rows:
		ids.add(eid)
		e = effects.get(eid)
		if e is None:
			effects[eid] = e = {'key': key, 'type': typ, 'created': float(created)}
		e['state'] = state
		e['upd'] = float(upd)
		if state == 'cancelled':
			e.setdefault('cancel_upd', float(upd))
	if full:
		for eid, e in effects.items():
			if eid not in ids:
				e['gone'] = True
	last_poll_from = start
	return True


def read_reinjected():
	"""Records the effects reinject_all sent back to pending, and when."""
	global last_reinject_from
	start = time.time()
	rows = try_psql("""SELECT effect_id, extract(epoch FROM reinjected_at) FROM idemgate.dead_letters
		WHERE kind = 'effect' AND effect_id IS NOT NULL
		AND reinjected_at >= to_timestamp(%f)""" % (last_reinject_from - 30))
	if rows is None:
		return
	for eid, at in rows:
		sanctioned.setdefault(eid, set()).add(float(at))
	last_reinject_from = start


def sample_rss():
	rows = try_psql('SELECT pid FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL')
	if rows is None:
		return
	s = {}
	for (pid,) in rows:
		try:
			with open('/proc/%s/status' % pid) as f:
				st = dict(l.split(':', 1) for l in f if ':' in l)
			s[int(pid)] = (int(st['RssAnon'].split()[0]), int(st['VmRSS'].split()[0]))
		except (OSError, KeyError, ValueError):
			pass
	if s:
		rss.append((time.time(), s))


# --------------------------------------------------------------- faults

def postmaster_pid():
	try:
		with open(os.path.join(A.data, 'postmaster.pid')) as f:
			return int(f.readline())
	except (OSError, ValueError):
		return None


def dispatcher_pids():
	rows = try_psql('SELECT pid FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL')
	return [int(r[0]) for r in rows] if rows else []


def alive(pid):
	try:
		with open('/proc/%d/stat' % pid) as f:
			return f.read().split(') ')[1][0] not in 'ZX'
	except (OSError, IndexError):
		return False


def wait_recovered(what, secs=90):
	"""Waits for the cluster to answer and both dispatchers to run."""
	end = time.time() + secs
	while time.time() < end:
		rows = try_psql('SELECT count(*) FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL', timeout=10)
		if rows and int(rows[0][0]) >= 2:
			return True
		time.sleep(0.5)
	unrecovered.append(what)
	log('NOT RECOVERED after %s' % what)
	return False


def start_cluster():
	return subprocess.run(
		['runuser', '-u', 'postgres', '--', A.pgbin + '/pg_ctl', '-D', A.data, '-l',
		 os.path.join(A.dir, 'server.log'), '-w', '-t', '60', 'start'],
		stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def fault_kill_postmaster():
	pm = postmaster_pid()
	if pm is None:
		return
	os.kill(pm, signal.SIGKILL)
	# Wait for the server's processes to go (they notice the death).
	end = time.time() + 30
	while time.time() < end and alive(pm):
		time.sleep(0.05)
	started = False
	while time.time() < end + 30 and not started:
		started = start_cluster()
		if not started:
			time.sleep(1)
	if not started:
		unrecovered.append('postmaster restart')
		log('could not start the cluster again')
		return
	wait_recovered('postmaster kill')


def fault_kill_dispatcher(sig):
	pids = dispatcher_pids()
	if not pids:
		return
	os.kill(rnd.choice(pids), sig)
	time.sleep(0.5)
	wait_recovered('dispatcher %s' % ('SIGKILL' if sig == signal.SIGKILL else 'SIGTERM'))


pending_ends = []	# (time, callable) for the windows that end later


held_now = set()	# None (the switch) or a paused type while its window is open


def fault_switch_off():
	# An error may come after the commit (the connection lost in a crash):
	# the switch goes on again in any case, the window counts only when
	# the switch-off is known to have committed. Windows never overlap: a
	# second switch-off while one is open would end with the first one's
	# switch-on, and the requests after it would count as held.
	if None in held_now:
		return
	held_now.add(None)
	ok = try_psql("SELECT idemgate.set_actions_enabled(false, 'soak', 'soak fault')") is not None
	start = time.time()		# committed before this

	def on():
		end = time.time()		# before the switch-on begins
		held_now.discard(None)
		if ok:
			windows.append((start, end, None))
		if try_psql("SELECT idemgate.set_actions_enabled(true, 'soak', 'soak fault over')") is None:
			pending_ends.append((time.time() + 2, on_retry))
	def on_retry():
		if try_psql("SELECT idemgate.set_actions_enabled(true, 'soak', 'soak fault over')") is None:
			pending_ends.append((time.time() + 2, on_retry))
	pending_ends.append((time.time() + rnd.uniform(1, 5), on))


def fault_pause():
	typ = rnd.choice(TYPES)
	if typ in held_now:
		return
	held_now.add(typ)
	ok = try_psql("SELECT idemgate.pause_effect_type('%s', 'soak', 'soak fault')" % typ) is not None
	start = time.time()

	def resume():
		held_now.discard(typ)
		if ok:
			windows.append((start, time.time(), typ))
		if try_psql("SELECT idemgate.resume_effect_type('%s', 'soak')" % typ) is None:
			pending_ends.append((time.time() + 2, resume_retry))
	def resume_retry():
		if try_psql("SELECT idemgate.resume_effect_type('%s', 'soak')" % typ) is None:
			pending_ends.append((time.time() + 2, resume_retry))
	pending_ends.append((time.time() + rnd.uniform(1, 5), resume))


def fault_purge():
	try_psql("SELECT idemgate.purge('%s')" % A.purge_after, timeout=120)


def fault_reinject():
	# Each reinjected effect goes back to pending and is sent again: the
	# dead letter's reinjected_at (read by read_reinjected) sanctions it.
	try_psql("SELECT idemgate.reinject_all('soak')")
	read_reinjected()


def fault_cancel():
	rows = try_psql("""SELECT effect_id FROM idemgate.outbox WHERE state IN ('pending', 'unknown')
		ORDER BY random() LIMIT 3""") or []
	for (eid,) in rows:
		r = try_psql("SELECT idemgate.cancel_effect('%s', 'soak', 'soak fault')" % eid)
		if r is not None:
			cancelled_at[eid] = time.time()
	rows = try_psql("""SELECT approval_id FROM idemgate.approvals WHERE consumed_at IS NULL
		AND expires_at > now() ORDER BY random() LIMIT 1""") or []
	for (aid,) in rows:
		try_psql("SELECT idemgate.cancel_approval('%s', 'soak', 'soak fault')" % aid)


def fault_resolve():
	"""The operator's procedure for unknown effects: ask the provider (the sink)."""
	rows = try_psql("""SELECT effect_id FROM idemgate.outbox WHERE state = 'unknown'
		AND updated_at < now() - interval '5 seconds' ORDER BY random() LIMIT 20""") or []
	read_sink()
	for (eid,) in rows:
		delivered = any(200 <= s < 300 for (_, _, s, _) in sink.get(eid, []))
		at = time.time()	# before the commit that makes it pending
		try:
			psql("SELECT idemgate.resolve_effect('%s', %s, 'soak', NULL, 'checked with the sink')"
				 % (eid, 'true' if delivered else 'false'))
			ok = True
		except RuntimeError as e:
			# An ERROR rolled back; a lost connection may have committed.
			ok = 'ERROR:' not in str(e)
		except Exception:	# a timeout: may have committed
			ok = True
		if ok and not delivered:
			sanctioned.setdefault(eid, set()).add(at)


FAULTS = [
	('kill -9 dispatcher', 2, lambda: fault_kill_dispatcher(signal.SIGKILL)),
	('SIGTERM dispatcher', 1, lambda: fault_kill_dispatcher(signal.SIGTERM)),
	('kill -9 postmaster', 1, fault_kill_postmaster),
	('kill switch off', 2, fault_switch_off),
	('pause a type', 2, fault_pause),
	('purge', 2, fault_purge),
	('reinject_all', 2, fault_reinject),
	('cancel', 2, fault_cancel),
	('resolve unknown', 2, fault_resolve),
]


def pick_fault():
	total = sum(w for _, w, _ in FAULTS)
	x = rnd.uniform(0, total)
	for name, w, fn in FAULTS:
		x -= w
		if x <= 0:
			return name, fn
	return FAULTS[-1][0], FAULTS[-1][2]


# ----------------------------------------------------------------- main

def interrupted(signum, frame):
	stop_loaders()
	sys.exit(1)


signal.signal(signal.SIGTERM, interrupted)
signal.signal(signal.SIGINT, interrupted)

log('seed %d, %.1f min, load %.0f automatic + %.0f approval runs/s, faults %s'
	% (SEED, A.minutes, A.rate, A.approval_rate, A.faults))
tend_loaders(True)
next_fault = time.time() + rnd.uniform(A.fault_gap / 2, A.fault_gap * 1.5)
next_poll = next_rss = next_report = time.time()
while time.time() < END:
	now = time.time()
	for item in sorted(pending_ends, key=lambda x: x[0]):
		if item[0] <= now:
			pending_ends.remove(item)
			item[1]()
	if A.faults == 'on' and now >= next_fault and now < END - 10:
		name, fn = pick_fault()
		faults[name] = faults.get(name, 0) + 1
		log('fault: %s' % name)
		fn()
		next_fault = time.time() + rnd.uniform(A.fault_gap / 2, A.fault_gap * 1.5)
	if now >= next_poll:
		up = poll_outbox()
		read_sink()
		read_reinjected()
		tend_loaders(up)
		next_poll = time.time() + 2
	if now >= next_rss:
		sample_rss()
		next_rss = time.time() + 10
	if now >= next_report:
		done = sum(1 for e in effects.values() if e.get('state') == 'completed')
		last = rss[-1][1] if rss else {}
		log('%d effects seen, %d completed, %d keys at the sink; dispatchers %s'
			% (len(effects), done, len(sink),
			   ', '.join('%d: RssAnon %.1f MB VmRSS %.1f MB' % (p, a / 1024, v / 1024)
						 for p, (a, v) in sorted(last.items()))))
		next_report = time.time() + 60
	time.sleep(0.2)

# ---------------------------------------------------------------- drain

log('drain: load stopped, no more faults')
stop_loaders()
for when, fn in sorted(pending_ends, key=lambda x: x[0]):
	fn()
pending_ends.clear()
for _ in range(3):
	if try_psql("SELECT idemgate.set_actions_enabled(true, 'soak', 'drain')") is not None:
		break
	wait_recovered('drain')
for t in TYPES:
	try_psql("SELECT idemgate.resume_effect_type('%s', 'soak')" % t)
sample_rss()
rss_end = rss[-1] if rss else None
drain_end = time.time() + A.drain_secs
open_left = None
while time.time() < drain_end:
	rows = try_psql("SELECT count(*) FROM idemgate.outbox WHERE state IN ('pending', 'sending')")
	if rows is not None:
		open_left = int(rows[0][0])
		if open_left == 0:
			break
	poll_outbox()
	read_sink()
	read_reinjected()
	time.sleep(1)
log('drain: %s effects still pending or sending' % open_left)
time.sleep(3)	# the last completions settle their runs
poll_outbox(full=True)
read_reinjected()
# A run completes when none of its effects is left in another state than
# completed or cancelled (docs/outbox.md; a failed effect keeps its run
# approved so that its dead letter can be reinjected).
stalled = try_psql("""SELECT count(*) FROM idemgate.runs r WHERE r.state = 'approved'
	AND NOT EXISTS (SELECT FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key
	AND o.state NOT IN ('completed', 'cancelled'))""")
os.kill(A.sink_pid, signal.SIGTERM)		# flushes its log
for _ in range(100):
	if not alive(A.sink_pid):
		break
	time.sleep(0.1)
read_sink()
if sink_partial:
	sink_partial += '\n'
	read_sink()

# ---------------------------------------------------------------- judge

lost = []
for eid, e in effects.items():
	got2xx = any(200 <= s < 300 for (_, _, s, _) in sink.get(eid, []))
	st = e.get('state')
	if st == 'completed' and not got2xx:
		lost.append((eid, 'completed without a 2xx at the sink'))
	elif e.get('gone') and st not in ('completed', 'failed', 'cancelled') and not got2xx:
		lost.append((eid, 'gone while %s, never answered 2xx' % st))
	elif not e.get('gone') and st in ('pending', 'sending') and not got2xx:
		lost.append((eid, '%s after the drain, never answered 2xx' % st))

dups = []			# effects of PLAIN types sent again without a refusal or a sanction
dup_reqs = 0
held = []
for eid, reqs in sink.items():
	reqs.sort()
	typ = next((t for (_, _, _, t) in reqs if t), None) or effects.get(eid, {}).get('type')
	if typ in PLAIN:
		# armed: the latest request whose answer the provider may have acted
		# on; a later request needs a sanction after it (never after a 2xx).
		armed_at, armed_ok, again = None, False, 0
		for (n, rx, s, t) in reqs:
			if armed_at is not None:
				if armed_ok or not any(armed_at < x < rx for x in sanctioned.get(eid, ())):
					again += 1
				else:
					armed_at = None
			if s not in REFUSALS and not armed_ok:
				armed_at, armed_ok = rx, 200 <= s < 300
		if again:
			dups.append(eid)
			dup_reqs += again
	for (n, rx, s, t) in reqs:
		for (ws, we, wt) in windows:
			if ws < rx < we and (wt is None or wt == (t or typ)):
				held.append((eid, n, 'inside a %s window' % (wt or 'kill switch')))
		c = cancelled_at.get(eid)
		if c is not None and rx > c:
			held.append((eid, n, 'after its cancel'))

lat = []
for eid, e in effects.items():
	reqs = sink.get(eid, [])
	ok = [rx for (n, rx, s, _) in reqs if 200 <= s < 300]
	if ok and e.get('created'):
		lat.append((min(ok) - e['created']) * 1000)
lat.sort()
steady = sorted((min(rx for (n, rx, s, _) in sink.get(eid, []) if 200 <= s < 300) - e['created']) * 1000
				for eid, e in effects.items() if e.get('type') == 'steady' and e.get('created')
				and any(200 <= s < 300 for (_, _, s, _) in sink.get(eid, [])))
p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float('nan')
p50 = lat[len(lat) // 2] if lat else float('nan')

first = next((s for (t, s) in rss if t - T0 >= 20), rss[0][1] if rss else {})
last = rss_end[1] if rss_end else {}
rss_a = sum(a for a, _ in first.values()) / 1024
rss_b = sum(a for a, _ in last.values()) / 1024
# The longest-lived dispatcher process: its own memory from first to last sample.
life = {}
for t, s in rss:
	for pid, (a, _) in s.items():
		life.setdefault(pid, []).append((t, a))
longest = max(life.items(), key=lambda kv: kv[1][-1][0] - kv[1][0][0]) if life else None

# Deliveries per second over the load period, first and last tenth.
oks = sorted(min(rx for (n, rx, s, _) in reqs if 200 <= s < 300)
			 for reqs in sink.values() if any(200 <= s < 300 for (_, _, s, _) in reqs))
tenth = (END - T0) / 10
first_rate = sum(1 for t in oks if T0 <= t < T0 + tenth) / tenth if oks else 0
last_rate = sum(1 for t in oks if END - tenth <= t < END) / tenth if oks else 0

minutes = (time.time() - T0) / 60
errs = 0
for name in ('auto1', 'auto2', 'approval'):
	try:
		with open(os.path.join(A.dir, name + '.err')) as f:
			errs += sum(1 for l in f if 'error' in l.lower())
	except OSError:
		pass

log('faults: ' + ', '.join('%s %d' % kv for kv in sorted(faults.items())))
log('pgbench started %d times, %d error lines (crashes end their connections)' % (loader_starts, errs))
log('latency claim -> first 2xx at the sink: p50 %.0f ms, p99 %.0f ms over %d effects' % (p50, p99, len(lat)))
if steady:
	log('  of which the steady type (/ok, no injected faults): p50 %.0f ms, p99 %.0f ms over %d'
		% (steady[len(steady) // 2], steady[min(len(steady) - 1, int(len(steady) * 0.99))], len(steady)))
log('deliveries (first 2xx per key) per second: first tenth %.0f, last tenth %.0f' % (first_rate, last_rate))
if longest:
	pid, pts = longest
	log('longest-lived dispatcher %d: RssAnon %.1f -> %.1f MB over %.1f min'
		% (pid, pts[0][1] / 1024, pts[-1][1] / 1024, (pts[-1][0] - pts[0][0]) / 60))
states = {}
for e in effects.values():
	states[e.get('state')] = states.get(e.get('state'), 0) + 1
log('final states: ' + ', '.join('%s %d' % kv for kv in sorted(states.items(), key=str)))
for eid, why in lost[:20]:
	log('LOST %s: %s (sink: %s)' % (eid, why, sink.get(eid)))
log('sink answers, by type: ' + '; '.join(
	'%s: %s' % (typ, ', '.join('%s %d' % (k, c) for (t, k), c in
							  sorted(answers.items(), key=lambda kv: (len(kv[0][1]), kv[0][1])) if t == typ))
	for typ in TYPES))
log('re-sends the soak sanctioned: %d effects (resolve_effect not delivered, reinject_all)'
	% sum(1 for eid in sanctioned if effects.get(eid, {}).get('type') in PLAIN))
log('duplicates: %d effects of non-idempotent types, %d requests more than allowed'
	% (len(dups), dup_reqs))
for eid in dups[:20]:
	log('DUPLICATE %s (%s): %s; sanctioned at %s'
		% (eid, effects.get(eid, {}).get('type'), show(eid),
		   ', '.join('%.3f' % x for x in sorted(sanctioned.get(eid, ()))) or 'never'))
for eid, n, why in held[:20]:
	log('SENT WHILE HELD %s request n=%d %s' % (eid, n, why))

# Outage windows (the flaky type, run.sh): the circuit opened and closed
# on its own; what the windows cost.
circ = try_psql("""SELECT count(*) FILTER (WHERE kind = 'endpoint_circuit_opened'),
	count(*) FILTER (WHERE kind = 'endpoint_circuit_closed')
	FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%' AND details->>'effect_type' = 'flaky'""")
circ_opened, circ_closed = (int(circ[0][0]), int(circ[0][1])) if circ else (0, 0)
flaky_dead = try_psql("SELECT count(*) FROM idemgate.dead_letters WHERE effect_type = 'flaky'")
log('outage windows (flaky, 15 s of 503 every 40 s): %d effects, %d answered 503, circuit opened %d and closed %d times, %s dead letters'
	% (sum(1 for e in effects.values() if e.get('type') == 'flaky'),
	   sum(c for (t, k), c in answers.items() if t == 'flaky' and k == '503'),
	   circ_opened, circ_closed, flaky_dead[0][0] if flaky_dead else '?'))

crashes = []
try:
	with open(os.path.join(A.dir, 'server.log'), errors='replace') as f:
		crashes = [l.strip() for l in f
				   if 'PANIC' in l or 'TRAP:' in l or 'terminated by signal 6' in l
				   or 'terminated by signal 11' in l]
except OSError:
	pass
for l in crashes[:5]:
	log('SERVER LOG: ' + l)

checks = [
	(len(lost) == 0, '%d lost' % len(lost)),
	(len(dups) == 0, '%d duplicated to non-idempotent endpoints' % len(dups)),
	(not unrecovered, 'every fault recovered (%d faults; not recovered: %s)'
	 % (sum(faults.values()), ', '.join(unrecovered) or 'none')),
	(len(held) == 0, '%d requests reached the sink while switched off, paused or cancelled (%d windows, %d cancels)'
	 % (len(held), len(windows), len(cancelled_at))),
	(open_left == 0, 'drained: %s effects left pending or sending' % open_left),
	(stalled is not None and stalled[0][0] == '0',
	 'no run left approved with its effects completed or cancelled (%s)' % (stalled[0][0] if stalled else '?')),
	(not crashes, 'no process crashed by itself (server log: %d PANIC, assertion or signal 6/11)' % len(crashes)),
	(circ_opened >= 1, 'outage windows opened the flaky endpoint\'s circuit (%d times, closed %d)'
	 % (circ_opened, circ_closed)),
	(len(effects) >= A.minutes * 60 * A.rate * 0.3, '%d effects flowed (at least %d expected)'
	 % (len(effects), A.minutes * 60 * A.rate * 0.3)),
]
passed = sum(1 for ok, _ in checks if ok)
for ok, what in checks:
	print('%s - %s' % ('ok' if ok else 'not ok', what))
print('%d passed, %d failed' % (passed, len(checks) - passed))
print('soak: %.0f min, %d effects, %d lost, %d duplicated to non-idempotent endpoints, RSS %.1f→%.1f MB, p99 %.0f ms'
	  % (A.minutes, len(effects), len(lost), len(dups), rss_a, rss_b, p99))
sys.exit(0 if passed == len(checks) else 1)
