// test/n8n/drive.js — drives the shipped n8n workflows (examples/n8n-postgres-node/) in a
// running n8n on loopback and checks what idemgate recorded. Started by
// test/n8n/run.sh, which sets the environment below. Prints one "ok - ..." or
// "not ok - ..." line per check and "N passed, M failed" last.
//
//   N8N_URL        http://127.0.0.1:<port>   n8n under test
//   PGHOST/PGPORT/PGDATABASE/PGUSER          superuser connection to the test database
//   SINK_LOG       the loopback sink's JSONL request log
//   N8N_MODULES    node_modules of the cached n8n install (for pg)
//   PPTR_MODULES   node_modules of the cached puppeteer-core install
//   CHROMIUM       Debian's chromium binary
'use strict';
const fs = require('fs');
const path = require('path');
const { Client } = require(path.join(process.env.N8N_MODULES, 'pg'));
const puppeteer = require(path.join(process.env.PPTR_MODULES, 'puppeteer-core'));

const N8N = process.env.N8N_URL;
const APPROVER_HEADER = 'x-auth-request-email';
let passed = 0;
let failed = 0;

function check(ok, what, detail) {
  if (ok) {
    passed++;
    console.log(`ok - ${what}`);
  } else {
    failed++;
    console.log(`not ok - ${what}${detail === undefined ? '' : ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail))}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, ms = 30000, every = 250) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    last = await fn();
    if (last) return last;
    await sleep(every);
  }
  return last;
}

function sinkRequests() {
  if (!fs.existsSync(process.env.SINK_LOG)) return [];
  return fs.readFileSync(process.env.SINK_LOG, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function post(pathname, body, headers = {}) {
  const res = await fetch(N8N + pathname, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { json = null; }
  return { status: res.status, json, text };
}

async function intake(db) {
  // 50 keys x 10 concurrent deliveries of the same event: exactly one claims each key.
  const keys = Array.from({ length: 50 }, (_, i) => `n8n-intake-${i}`);
  const results = [];
  const t0 = Date.now();
  for (let i = 0; i < keys.length; i += 5) {
    const wave = [];
    for (const key of keys.slice(i, i + 5)) {
      for (let d = 0; d < 10; d++) {
        wave.push(post('/webhook/idemgate/intake', { event_id: key, amount: 42, note: 'ok, checked' })
          .then((r) => results.push({ key, ...r })));
      }
    }
    await Promise.all(wave);
  }
  const secs = (Date.now() - t0) / 1000;
  console.log(`# intake: 500 deliveries in ${secs.toFixed(1)} s`);
  const bad = results.filter((r) => r.status !== 200 || !r.json);
  check(bad.length === 0, 'intake: all 500 deliveries answered 200 with JSON', bad.slice(0, 3));
  const claimed = results.filter((r) => r.json && r.json.outcome === 'claimed');
  check(claimed.length === 50, 'intake: exactly 50 deliveries claimed', { claimed: claimed.length });
  const perKey = new Map();
  for (const r of claimed) perKey.set(r.key, (perKey.get(r.key) || 0) + 1);
  check(keys.every((k) => perKey.get(k) === 1), 'intake: each key claimed exactly once');
  const dups = results.filter((r) => r.json && r.json.outcome === 'duplicate');
  check(dups.length === 450, 'intake: the other 450 answered duplicate', { duplicates: dups.length });
  const runs = await db.query(
    "SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'completed' AND result->>'answer' = 'Received ' || idempotency_key)::int AS done FROM idemgate.runs WHERE idempotency_key LIKE 'n8n-intake-%'");
  check(runs.rows[0].n === 50 && runs.rows[0].done === 50, 'intake: 50 runs, all completed with their result', runs.rows[0]);
  // A later delivery gets the stored result.
  const again = await post('/webhook/idemgate/intake', { event_id: 'n8n-intake-7', amount: 42, note: 'ok, checked' });
  check(again.status === 200 && again.json && again.json.outcome === 'duplicate' && again.json.state === 'completed'
        && again.json.result && again.json.result.answer === 'Received n8n-intake-7',
  'intake: a later duplicate is answered with the stored result', again.json);
  // Same key, different payload: a clear 409.
  const mismatch = await post('/webhook/idemgate/intake', { event_id: 'n8n-intake-7', amount: 43 });
  check(mismatch.status === 409 && mismatch.json && mismatch.json.code === 'IG001' && /different payload/.test(mismatch.json.message || ''),
    'intake: a different payload under the same key answers 409 with IG001', { status: mismatch.status, body: mismatch.text });
  const noKey = await post('/webhook/idemgate/intake', { amount: 1 });
  check(noKey.status === 400 && noKey.json && noKey.json.error === 'bad_request' && /"key"/.test(noKey.json.message || ''),
    'intake: an event without a key answers 400 naming the field', { status: noKey.status, body: noKey.text });
}

async function requestApproval(eventId, subject) {
  const r = await post('/webhook/idemgate/draft', {
    event_id: eventId, subject, customer_email: 'ana@example.com', customer_name: 'Ana', source_url: 'https://crm.example/t/' + eventId,
  });
  const sent = await waitFor('link', () => sinkRequests().find((q) => q.path === '/notify' && q.body && String(q.body.text).includes(subject)), 10000);
  const m = sent && String(sent.body.text).match(/\?token=([A-Za-z0-9_%-]+)/);
  return { response: r, link: m ? decodeURIComponent(m[1]) : null, text: sent && sent.body.text };
}

async function approvalSnapshot(db, key) {
  const r = await db.query(
    `SELECT r.state, r.version, a.consumed_at, a.decision, a.approver_subject,
            (SELECT count(*)::int FROM idemgate.events e WHERE e.idempotency_key = r.idempotency_key) AS events,
            (SELECT count(*)::int FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key) AS effects
       FROM idemgate.runs r JOIN idemgate.approvals a USING (idempotency_key) WHERE r.idempotency_key = $1`, [key]);
  return r.rows[0];
}

async function approvals(db, browser) {
  const a1 = await requestApproval('n8n-approval-1', 'Refund 42 EUR, ticket 4471');
  check(a1.response.status === 202 && a1.response.json && a1.response.json.outcome === 'awaiting_human' && !a1.response.text.includes(a1.link || '@@'),
    'approval request: answered 202 awaiting_human, without the token', a1.response.text);
  check(!!a1.link && a1.link.length === 43, 'approval request: the link was sent to the notifier', a1.text);
  const before = await approvalSnapshot(db, 'n8n-approval-1');
  check(before && before.state === 'awaiting_human' && before.consumed_at === null, 'approval request: run awaiting_human', before);

  const page = await browser.newPage();
  page.setDefaultNavigationTimeout(90000);
  await page.setExtraHTTPHeaders({ [APPROVER_HEADER]: 'maria@example.com' });
  const url = `${N8N}/webhook/idemgate/approval?token=${encodeURIComponent(a1.link)}`;
  let res = await page.goto(url, { waitUntil: 'load' });
  let text = await page.evaluate(() => document.body.innerText);
  check(res.status() === 200 && text.includes('Approval requested') && text.includes('Refund 42 EUR, ticket 4471') && text.includes('ana@example.com'),
    'approval page: GET renders the card and the effects', { status: res.status(), text: text.slice(0, 300) });
  const buttons = await page.$$eval('form button', (bs) => bs.map((b) => b.value));
  check(JSON.stringify(buttons) === '["approve","reject"]', 'approval page: one button per allowed decision', buttons);
  await page.reload({ waitUntil: 'load' });
  const afterGet = await approvalSnapshot(db, 'n8n-approval-1');
  check(JSON.stringify(afterGet) === JSON.stringify(before), 'approval page: two GETs changed nothing', { before, afterGet });

  // Without the SSO header: no card. A POST without Origin (not from the page): refused.
  const anon = await fetch(url);
  check(anon.status === 401 && !(await anon.text()).includes('Refund 42'), 'approval page: GET without the identity header shows no card (401)');
  const forged = await fetch(url, { method: 'POST', headers: { [APPROVER_HEADER]: 'maria@example.com', 'content-type': 'application/x-www-form-urlencoded' }, body: 'decision=approve&csrf=0123456789abcdef' });
  check(forged.status === 403, 'approval page: a POST without the page\'s CSRF token is refused (403)', forged.status);
  // The CSRF token is bound to the approver: another approver's page token does not work.
  const csrf = await page.$eval('input[name=csrf]', (i) => i.value);
  const other = await fetch(url, { method: 'POST', headers: { [APPROVER_HEADER]: 'joan@example.com', 'content-type': 'application/x-www-form-urlencoded' }, body: 'decision=approve&csrf=' + csrf });
  check(other.status === 403, 'approval page: a CSRF token works only for the approver it was shown to', other.status);
  const forgedSnap = await approvalSnapshot(db, 'n8n-approval-1');
  check(forgedSnap.consumed_at === null, 'approval page: the refused POST decided nothing');

  // The approver also has the page open in a second tab.
  const tab2 = await browser.newPage();
  await tab2.setExtraHTTPHeaders({ [APPROVER_HEADER]: 'maria@example.com' });
  tab2.setDefaultNavigationTimeout(90000);
  await tab2.goto(url, { waitUntil: 'load' });
  await page.bringToFront();
  await page.type('textarea[name=reason]', 'ok, checked with the customer');
  [res] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[value=approve]')]);
  text = await page.evaluate(() => document.body.innerText);
  check(res.status() === 200 && text.includes('Approved'), 'approval page: POST approves', { status: res.status(), text: text.slice(0, 200) });
  const decided = await db.query(
    `SELECT a.decision, a.approver_subject, (SELECT details->>'reason' FROM idemgate.events e WHERE e.idempotency_key = a.idempotency_key AND kind = 'approval_decided') AS reason,
            (SELECT count(*)::int FROM idemgate.outbox o WHERE o.idempotency_key = a.idempotency_key) AS effects
       FROM idemgate.approvals a WHERE a.idempotency_key = 'n8n-approval-1'`);
  check(decided.rows[0].decision === 'approve' && decided.rows[0].approver_subject === 'maria@example.com'
        && decided.rows[0].reason === 'ok, checked with the customer' && decided.rows[0].effects === 1,
  'approval page: approved by the header identity, reason kept whole, one effect queued', decided.rows[0]);

  await tab2.bringToFront();
  [res] = await Promise.all([tab2.waitForNavigation({ waitUntil: 'load' }), tab2.click('button[value=approve]')]);
  text = await tab2.evaluate(() => document.body.innerText);
  check(res.status() === 409 && text.includes('already decided'), 'approval page: a second POST (the other tab) shows the decided state', { status: res.status(), text: text.slice(0, 200) });
  await tab2.close();
  await page.bringToFront();
  res = await page.goto(url, { waitUntil: 'load' });
  text = await page.evaluate(() => document.body.innerText);
  check(text.includes('already decided') && !text.includes('Refund 42'), 'approval page: GET after the decision shows the decided state');
  const events = await db.query("SELECT count(*)::int AS n FROM idemgate.events WHERE idempotency_key = 'n8n-approval-1' AND kind = 'approval_decided'");
  check(events.rows[0].n === 1, 'approval page: decided exactly once', events.rows[0]);

  // A card holding markup is shown as text.
  const evil = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';
  const a2 = await requestApproval('n8n-approval-xss', evil);
  check(!!a2.link, 'approval request: a second approval with markup in its card', a2.text);
  res = await page.goto(`${N8N}/webhook/idemgate/approval?token=${encodeURIComponent(a2.link || 'x')}`, { waitUntil: 'load' });
  await sleep(200);
  const xss = await page.evaluate(() => ({
    text: document.body.innerText,
    pwned: window.__pwned === undefined ? null : window.__pwned,
    scripts: document.querySelectorAll('script').length,
    imgs: document.querySelectorAll('img').length,
  }));
  check(xss.text.includes('<script>window.__pwned = 1</script>') && xss.pwned === null && xss.scripts === 0 && xss.imgs === 0,
    'approval page: a card containing <script> is shown as text', xss);

  const bogus = await page.goto(`${N8N}/webhook/idemgate/approval?token=not-a-token`, { waitUntil: 'load' });
  text = await page.evaluate(() => document.body.innerText);
  check(bogus.status() === 404 && text.includes('not valid'), 'approval page: an unknown token shows "not valid"', bogus.status());
  await page.close();
}

async function worker(db) {
  // The approved effect (type n8n_http) is pulled by the effect worker, sent
  // to the loopback sink and completed; the run completes with its effects.
  const done = await waitFor('effect completed', async () => {
    const r = await db.query("SELECT effect_id, state, provider_id, last_status FROM idemgate.outbox WHERE idempotency_key = 'n8n-approval-1'");
    return r.rows[0] && r.rows[0].state === 'completed' ? r.rows[0] : null;
  }, 45000, 500);
  check(!!done, 'effect worker: the approved effect was completed', done);
  if (!done) return;
  const sent = sinkRequests().filter((q) => q.path === '/worker' && q.idempotency_key === done.effect_id);
  check(sent.length === 1 && sent[0].body && sent[0].body.target === 'ana@example.com' && sent[0].body.payload && sent[0].body.payload.label === 'reply',
    'effect worker: delivered once to the sink with Idempotency-Key = effect id', sent);
  check(sent.length === 1 && done.provider_id === `prov-${sent[0].n}` && done.last_status === 200, 'effect worker: provider id and status recorded', done);
  const run = await db.query("SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'n8n-approval-1'");
  check(run.rows[0].state === 'completed' && run.rows[0].result && run.rows[0].result.effects
        && run.rows[0].result.effects[0].provider_id === done.provider_id,
  'effect worker: the run completed with the stored effects result', run.rows[0]);
  const dup = await post('/webhook/idemgate/draft', { event_id: 'n8n-approval-1', subject: 'Refund 42 EUR, ticket 4471', customer_email: 'ana@example.com', customer_name: 'Ana', source_url: 'https://crm.example/t/n8n-approval-1' });
  check(dup.status === 200 && dup.json && dup.json.outcome === 'duplicate' && dup.json.result && dup.json.result.effects
        && dup.json.result.effects[0].effect_id === done.effect_id,
  'approval request: a duplicate of the delivered event gets the effects result', dup.text);
}

async function errorWorkflow(db) {
  // A workflow that owns a run fails; the error workflow records it with fail().
  await post('/webhook/idemgate-test/fail', { event_id: 'n8n-fail-1', n: 1 });
  const run = await waitFor('run failed', async () => {
    const r = await db.query("SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'n8n-fail-1'");
    return r.rows[0] && r.rows[0].state !== 'processing' ? r.rows[0] : null;
  }, 30000, 500);
  check(!!run && run.state === 'failed_retryable' && run.result && run.result.error_class === 'n8n_error'
        && /the model timed out, twice/.test(run.result.error) && /idemgate test: work that fails/.test(run.result.error),
  'error workflow: the failed run was recorded with fail() (failed_retryable, n8n_error)', run);
  const again = await post('/webhook/idemgate-test/fail', { event_id: 'n8n-fail-1', n: 1 });
  const recovered = await waitFor('recovered', async () => {
    const r = await db.query("SELECT count(*)::int AS n FROM idemgate.events WHERE idempotency_key = 'n8n-fail-1' AND kind = 'recovered'");
    return r.rows[0].n > 0 ? r.rows[0] : null;
  }, 20000, 250);
  check(again.status === 200 && !!recovered && recovered.n === 1, 'error workflow: the next delivery recovered the run', recovered);
}

async function alerts(db) {
  // The alert relay posts each NOTIFY idemgate_alerts to the chat sink with
  // the payload's business message (workflow or effect type, first keys),
  // its severity and state. A second session LISTENs to see the payloads.
  const listener = new Client();
  await listener.connect();
  const notes = [];
  listener.on('notification', (n) => { if (n.channel === 'idemgate_alerts') notes.push(JSON.parse(n.payload)); });
  await listener.query('LISTEN idemgate_alerts');
  const relayed = (p, from) => sinkRequests().slice(from).find((q) => q.path === '/alerts' && q.body
    && q.body.alert === p.alert && q.body.state === p.state && q.body.subject === p.subject);
  const says = (q, p) => !!q && typeof q.body.text === 'string' && q.body.text.includes(p.message)
    && q.body.text.includes(p.severity) && q.body.text.includes(p.state);
  try {
    // A business event: a run of workflow invoices fails for good (terminal_failure, at once).
    const key = 'invoice-2026-0918-ACME-4471';
    const run = (await db.query("SELECT lease_owner::text, version FROM idemgate.claim($1, '{\"amount\": 42}', '5 minutes', 'invoices', NULL, 'n8n-test')", [key])).rows[0];
    await db.query("SELECT idemgate.fail($1, $2, $3, 'invalid_output', 'the model answered without a total, twice', false)", [key, run.lease_owner, run.version]);
    await db.query("SELECT idemgate.set_actions_enabled(false, 'n8n-test', 'alert relay test')");
    let from = sinkRequests().length;
    await db.query('SELECT idemgate.publish_alerts()');
    await waitFor('notifications', () => notes.some((p) => p.alert === 'kill_switch_off')
      && notes.some((p) => p.alert === 'terminal_failure' && (p.keys || []).includes(key)), 5000, 100);
    const tf = notes.find((p) => p.alert === 'terminal_failure' && (p.keys || []).includes(key));
    check(!!tf && tf.state === 'firing' && /invoice-2026-0918-ACME-4471/.test(tf.message) && /workflow invoices/.test(tf.message),
      'alert relay: the terminal_failure payload names workflow and key', tf);
    const firing = notes.splice(0);
    const got = new Map();
    await waitFor('relayed', () => {
      for (const p of firing) if (!got.get(p)) got.set(p, relayed(p, from));
      return firing.every((p) => got.get(p));
    }, 30000, 250);
    const tq = tf && got.get(tf);
    check(says(tq, tf) && /^idemgate warning alert firing: run invoice-2026-0918-ACME-4471 of workflow invoices failed for good/.test(tq.body.text),
      'alert relay: the chat text is the business message ("run ... of workflow invoices failed for good"), with severity and state',
      { text: tq && tq.body.text, message: tf && tf.message });
    check(!!tq && !/SELECT \* FROM idemgate\.alerts/.test(tq.body.text), 'alert relay: no generic "see the alerts view" text when the payload names the event', tq && tq.body.text);
    const ks = firing.find((p) => p.alert === 'kill_switch_off');
    check(says(ks && got.get(ks), ks), 'alert relay: the kill_switch_off alert reached the chat sink with its message', { text: ks && got.get(ks) && got.get(ks).body.text, message: ks && ks.message });
    const missing = firing.filter((p) => !says(got.get(p), p));
    check(firing.length >= 2 && missing.length === 0, `alert relay: each of the ${firing.length} firing alerts was relayed with its message, severity and state`,
      missing.map((p) => ({ payload: p, relayed: got.get(p) && got.get(p).body })));

    // Cleared: the text says cleared, with what the alert said last.
    from = sinkRequests().length;
    await db.query("SELECT idemgate.set_actions_enabled(true, 'n8n-test', 'alert relay test done')");
    await db.query('SELECT idemgate.publish_alerts()');
    const cl = await waitFor('cleared', () => notes.find((p) => p.alert === 'kill_switch_off' && p.state === 'cleared'), 5000, 100);
    const cq = cl && await waitFor('relayed', () => relayed(cl, from), 20000);
    check(says(cq, cl) && /^idemgate info alert cleared: kill switch off/.test(cq.body.text),
      'alert relay: a cleared alert says cleared, with its message', { text: cq && cq.body.text, message: cl && cl.message });

    // Without details (idemgate.alert_notify_details off) the text points at the alerts view.
    notes.splice(0);
    from = sinkRequests().length;
    await db.query('SET idemgate.alert_notify_details = off');
    await db.query("SELECT idemgate.set_actions_enabled(false, 'n8n-test', 'alert relay test, no details')");
    await db.query('SELECT idemgate.publish_alerts()');
    const bare = await waitFor('bare', () => notes.find((p) => p.alert === 'kill_switch_off'), 5000, 100);
    const bq = bare && await waitFor('relayed', () => relayed(bare, from), 20000);
    check(!!bare && bare.message === undefined && !!bq
          && bq.body.text === `idemgate info alert firing: kill_switch_off since ${bare.at} (details: SELECT * FROM idemgate.alerts)`,
    'alert relay: a payload without details names the alert and points at the alerts view', { payload: bare, text: bq && bq.body.text });
  } finally {
    await db.query("SELECT idemgate.set_actions_enabled(true, 'n8n-test', 'alert relay test done')").catch(() => {});
    await db.query('SELECT idemgate.publish_alerts()').catch(() => {});
    await db.query('RESET idemgate.alert_notify_details').catch(() => {});
    await listener.end().catch(() => {});
  }
}

(async () => {
  const db = new Client();
  await db.connect();
  let browser = null;
  try {
    await intake(db);
    browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
    });
    await approvals(db, browser);
    await worker(db);
    await errorWorkflow(db);
    await alerts(db);
  } catch (e) {
    check(false, 'driver finished without an exception', e && e.stack);
  } finally {
    if (browser) await browser.close().catch(() => {});
    await db.end().catch(() => {});
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
})();
