// test/n8n/lib.js — what both n8n drivers (test/n8n/drive.js, the shipped
// workflows; test/n8n-nodes/drive.js, the workflows built from the idemgate
// nodes) check the same way: the concurrent intake, approval requests, the
// error workflow and the alert relay, with the helpers they share. Each
// check prints one "ok - ..." or "not ok - ..." line; test/n8n/harness.sh
// counts them and wants "# driver finished" last. The harness sets:
//
//   N8N_URL        http://127.0.0.1:<port>   n8n under test
//   PGHOST/PGPORT/PGDATABASE/PGUSER          superuser connection to the test database
//   PG_LOG         the PostgreSQL server log
//   SINK_LOG       the loopback sink's JSONL request log
//   CSRF_SECRET    n8n's IDEMGATE_CSRF_SECRET (the pages' CSRF tokens are HMACs with it)
//   N8N_MODULES    node_modules of the cached n8n install (for pg)
//   PPTR_MODULES   node_modules of the cached puppeteer-core install (test/n8n only)
//   CHROMIUM       Debian's chromium binary (test/n8n only)
'use strict';
const fs = require('fs');
const path = require('path');
const { Client } = require(path.join(process.env.N8N_MODULES, 'pg'));

const N8N = process.env.N8N_URL;
const ID_HEADER = 'x-auth-request-email';

/** check prints the check's line and returns whether it held. */
function check(ok, what, detail) {
  if (ok) console.log(`ok - ${what}`);
  else console.log(`not ok - ${what}${detail === undefined ? '' : ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail))}`);
  return ok;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** waitFor polls fn until it returns something truthy or ms pass; returns its last answer. */
async function waitFor(fn, ms = 30000, every = 250) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    last = await fn();
    if (last) return last;
    await sleep(every);
  }
  return last;
}

/** sinkRequests reads every request the loopback sink logged. */
function sinkRequests() {
  if (!fs.existsSync(process.env.SINK_LOG)) return [];
  return fs.readFileSync(process.env.SINK_LOG, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** request sends one request to n8n, a JSON or form body; the answer parsed when it is JSON. */
async function request(method, pathname, { json, form, headers = {} } = {}) {
  const h = { ...headers };
  let body;
  if (json !== undefined) { h['content-type'] = 'application/json'; body = JSON.stringify(json); }
  if (form !== undefined) { h['content-type'] = 'application/x-www-form-urlencoded'; body = new URLSearchParams(form).toString(); }
  const res = await fetch(N8N + pathname, { method, headers: h, body });
  const text = await res.text();
  let parsed = null;
  try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
  return { status: res.status, json: parsed, text, headers: res.headers };
}
const post = (p, json) => request('POST', p, { json });

/**
 * intake: 50 keys x 10 concurrent deliveries of the same event to
 * /webhook/PREFIX/intake, in waves of 5 keys: every delivery answered with
 * one of statuses and JSON, exactly one claims each key. Returns the keys
 * and the answers for the set's own checks.
 */
async function intake(prefix, keyPrefix, statuses) {
  const keys = Array.from({ length: 50 }, (_, i) => `${keyPrefix}-intake-${i}`);
  const results = [];
  const t0 = Date.now();
  for (let i = 0; i < keys.length; i += 5) {
    const wave = [];
    for (const key of keys.slice(i, i + 5)) {
      for (let d = 0; d < 10; d++) {
        wave.push(post(`/webhook/${prefix}/intake`, { event_id: key, amount: 42, note: 'ok, checked' }).then((r) => results.push({ key, ...r })));
      }
    }
    await Promise.all(wave);
  }
  console.log(`# intake: 500 deliveries (50 keys x 10 concurrent) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const bad = results.filter((r) => !statuses.includes(r.status) || !r.json);
  check(bad.length === 0, `intake: all 500 deliveries answered ${statuses.join(' or ')} with JSON`, bad.slice(0, 3).map((r) => `${r.status} ${r.text}`));
  const claimed = results.filter((r) => r.json && r.json.outcome === 'claimed');
  check(claimed.length === 50, 'intake: exactly 50 deliveries claimed', { claimed: claimed.length });
  const perKey = new Map();
  for (const r of claimed) perKey.set(r.key, (perKey.get(r.key) || 0) + 1);
  check(keys.every((k) => perKey.get(k) === 1), 'intake: each key claimed exactly once');
  return { keys, results };
}

/** intakeStored: the 50 runs completed with their result, which a later duplicate gets. */
async function intakeStored(db, prefix, keyPrefix) {
  const runs = await db.query(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'completed' AND result->>'answer' = 'Received ' || idempotency_key)::int AS done
       FROM idemgate.runs WHERE idempotency_key LIKE $1`, [`${keyPrefix}-intake-%`]);
  check(runs.rows[0].n === 50 && runs.rows[0].done === 50, 'intake: 50 runs, all completed with their result', runs.rows[0]);
  const key = `${keyPrefix}-intake-7`;
  const again = await post(`/webhook/${prefix}/intake`, { event_id: key, amount: 42, note: 'ok, checked' });
  check(again.status === 200 && again.json && again.json.outcome === 'duplicate' && again.json.state === 'completed'
        && again.json.result && again.json.result.answer === `Received ${key}`,
  'intake: a later duplicate is answered with the stored result', again.json);
}

/** requestApproval posts a draft to /webhook/PREFIX/draft and reads the token from the link the notifier got. */
async function requestApproval(prefix, eventId, subject, ms) {
  const r = await post(`/webhook/${prefix}/draft`, {
    event_id: eventId, subject, customer_email: 'ana@example.com', customer_name: 'Ana', source_url: 'https://crm.example/t/' + eventId,
  });
  const sent = await waitFor(() => sinkRequests().find((q) => q.path === '/notify' && q.body && String(q.body.text).includes(subject)), ms);
  const m = sent && String(sent.body.text).match(/\?token=([A-Za-z0-9_%-]+)/);
  return { response: r, token: m ? decodeURIComponent(m[1]) : null, text: sent && sent.body.text };
}

/** approvalSnapshot: what a decision would change of a run and its approval. */
async function approvalSnapshot(db, key) {
  const r = await db.query(
    `SELECT r.state, r.version, a.consumed_at, a.decision, a.approver_subject,
            (SELECT count(*)::int FROM idemgate.events e WHERE e.idempotency_key = r.idempotency_key) AS events,
            (SELECT count(*)::int FROM idemgate.events e WHERE e.idempotency_key = r.idempotency_key AND e.kind = 'approval_decided') AS decided,
            (SELECT count(*)::int FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key) AS effects
       FROM idemgate.runs r JOIN idemgate.approvals a USING (idempotency_key) WHERE r.idempotency_key = $1`, [key]);
  return r.rows[0];
}

/**
 * errorWorkflow: the test-only workflow (its name workflowName) that owns
 * run key fails at pathname without recording it; the set's error workflow
 * records it with fail(), and the next delivery recovers the run.
 */
async function errorWorkflow(db, { pathname, key, workflowName, failWith }) {
  await post(pathname, { event_id: key, n: 1 });
  const run = await waitFor(async () => {
    const r = await db.query('SELECT state, result FROM idemgate.runs WHERE idempotency_key = $1', [key]);
    return r.rows[0] && r.rows[0].state !== 'processing' ? r.rows[0] : null;
  }, 30000, 500);
  check(!!run && run.state === 'failed_retryable' && run.result && run.result.error_class === 'n8n_error'
        && /the model timed out, twice/.test(run.result.error) && run.result.error.includes(workflowName),
  `error workflow: the failed run was recorded with ${failWith} (failed_retryable, n8n_error)`, run);
  const again = await post(pathname, { event_id: key, n: 1 });
  const recovered = await waitFor(async () => {
    const r = await db.query("SELECT count(*)::int AS n FROM idemgate.events WHERE idempotency_key = $1 AND kind = 'recovered'", [key]);
    return r.rows[0].n > 0 ? r.rows[0] : null;
  }, 20000, 250);
  check(again.status === 200 && !!recovered && recovered.n === 1, 'error workflow: the next delivery recovered the run', recovered);
}

/**
 * alertRelay: the set's alert relay posts each NOTIFY idemgate_alerts to the
 * chat sink with the payload's business message (workflow or effect type,
 * first keys), its severity and state. A second session LISTENs to see the
 * payloads. actor is who flips the kill switch; label starts each check.
 */
async function alertRelay(db, { actor, label }) {
  const listener = new Client();
  await listener.connect();
  const notes = [];
  listener.on('notification', (n) => { if (n.channel === 'idemgate_alerts') notes.push(JSON.parse(n.payload)); });
  await listener.query('LISTEN idemgate_alerts');
  const relayed = (p, from) => sinkRequests().slice(from).find((q) => q.path === '/alerts' && q.body
    && q.body.alert === p.alert && q.body.state === p.state && q.body.subject === p.subject);
  const says = (q, p) => !!q && typeof q.body.text === 'string' && q.body.text.includes(p.message)
    && q.body.text.includes(p.severity) && q.body.text.includes(p.state);
  const killSwitch = (on, why) => db.query('SELECT idemgate.set_actions_enabled($1, $2, $3)', [on, actor, why]);
  try {
    // A business event: a run of workflow invoices fails for good (terminal_failure, at once).
    const key = 'invoice-2026-0918-ACME-4471';
    const run = (await db.query("SELECT lease_owner::text, version FROM idemgate.claim($1, '{\"amount\": 42}', '5 minutes', 'invoices', NULL, $2)", [key, actor])).rows[0];
    await db.query("SELECT idemgate.fail($1, $2, $3, 'invalid_output', 'the model answered without a total, twice', false)", [key, run.lease_owner, run.version]);
    await killSwitch(false, 'alert relay test');
    let from = sinkRequests().length;
    await db.query('SELECT idemgate.publish_alerts()');
    await waitFor(() => notes.some((p) => p.alert === 'kill_switch_off')
      && notes.some((p) => p.alert === 'terminal_failure' && (p.keys || []).includes(key)), 5000, 100);
    const tf = notes.find((p) => p.alert === 'terminal_failure' && (p.keys || []).includes(key));
    check(!!tf && tf.state === 'firing' && /invoice-2026-0918-ACME-4471/.test(tf.message) && /workflow invoices/.test(tf.message),
      `${label}: the terminal_failure payload names workflow and key`, tf);
    const firing = notes.splice(0);
    const got = new Map();
    await waitFor(() => {
      for (const p of firing) if (!got.get(p)) got.set(p, relayed(p, from));
      return firing.every((p) => got.get(p));
    }, 30000, 250);
    const tq = tf && got.get(tf);
    check(says(tq, tf) && /^idemgate warning alert firing: run invoice-2026-0918-ACME-4471 of workflow invoices failed for good/.test(tq.body.text),
      `${label}: the chat text is the business message ("run ... of workflow invoices failed for good"), with severity and state`,
      { text: tq && tq.body.text, message: tf && tf.message });
    check(!!tq && !/SELECT \* FROM idemgate\.alerts/.test(tq.body.text), `${label}: no generic "see the alerts view" text when the payload names the event`, tq && tq.body.text);
    const ks = firing.find((p) => p.alert === 'kill_switch_off');
    check(says(ks && got.get(ks), ks), `${label}: the kill_switch_off alert reached the chat sink with its message`, { text: ks && got.get(ks) && got.get(ks).body.text, message: ks && ks.message });
    const missing = firing.filter((p) => !says(got.get(p), p));
    check(firing.length >= 2 && missing.length === 0, `${label}: each of the ${firing.length} firing alerts was relayed with its message, severity and state`,
      missing.map((p) => ({ payload: p, relayed: got.get(p) && got.get(p).body })));

    // Cleared: the text says cleared, with what the alert said last.
    from = sinkRequests().length;
    await killSwitch(true, 'alert relay test done');
    await db.query('SELECT idemgate.publish_alerts()');
    const cl = await waitFor(() => notes.find((p) => p.alert === 'kill_switch_off' && p.state === 'cleared'), 5000, 100);
    const cq = cl && await waitFor(() => relayed(cl, from), 20000);
    check(says(cq, cl) && /^idemgate info alert cleared: kill switch off/.test(cq.body.text),
      `${label}: a cleared alert says cleared, with its message`, { text: cq && cq.body.text, message: cl && cl.message });

    // Without details (idemgate.alert_notify_details off) the text points at the alerts view.
    notes.splice(0);
    from = sinkRequests().length;
    await db.query('SET idemgate.alert_notify_details = off');
    await killSwitch(false, 'alert relay test, no details');
    await db.query('SELECT idemgate.publish_alerts()');
    const bare = await waitFor(() => notes.find((p) => p.alert === 'kill_switch_off'), 5000, 100);
    const bq = bare && await waitFor(() => relayed(bare, from), 20000);
    check(!!bare && bare.message === undefined && !!bq
          && bq.body.text === `idemgate info alert firing: kill_switch_off since ${bare.at} (details: SELECT * FROM idemgate.alerts)`,
    `${label}: a payload without details names the alert and points at the alerts view`, { payload: bare, text: bq && bq.body.text });
  } finally {
    await killSwitch(true, 'alert relay test done').catch(() => {});
    await db.query('SELECT idemgate.publish_alerts()').catch(() => {});
    await db.query('RESET idemgate.alert_notify_details').catch(() => {});
    await listener.end().catch(() => {});
  }
}

/**
 * drive runs a driver's sections in order, each [name, fn(db)], on one
 * superuser connection; an exception fails its section only. Then after(),
 * and "# driver finished".
 */
async function drive(sections, after = async () => {}) {
  const db = new Client();
  await db.connect();
  try {
    for (const [name, fn] of sections) {
      const t = Date.now();
      try {
        await fn(db);
      } catch (e) {
        check(false, `${name}: finished without an exception`, e && e.stack);
      }
      console.log(`# ${name}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
  } finally {
    await after().catch((e) => check(false, 'driver: cleaned up without an exception', e && e.stack));
    await db.end().catch(() => {});
  }
  console.log('# driver finished');
}

module.exports = {
  Client, N8N, ID_HEADER, check, sleep, waitFor, sinkRequests, request, post,
  intake, intakeStored, requestApproval, approvalSnapshot, errorWorkflow, alertRelay, drive,
};
