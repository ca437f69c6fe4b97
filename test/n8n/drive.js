// test/n8n/drive.js — drives the shipped n8n workflows (examples/n8n-postgres-node/) in a
// running n8n on loopback and checks what idemgate recorded. Started by
// test/n8n/run.sh through test/n8n/harness.sh, which sets the environment
// test/n8n/lib.js lists (here with PPTR_MODULES and CHROMIUM) and counts the
// "ok - ..." / "not ok - ..." lines. What both workflow sets are checked
// for alike is in test/n8n/lib.js.
'use strict';
const path = require('path');
const puppeteer = require(path.join(process.env.PPTR_MODULES, 'puppeteer-core'));
const {
  N8N, ID_HEADER: APPROVER_HEADER, check, sleep, waitFor, sinkRequests, post,
  intake: deliver, intakeStored, requestApproval: draft, approvalSnapshot, errorWorkflow, alertRelay, drive,
} = require('./lib');

async function intake(db) {
  // 50 keys x 10 concurrent deliveries of the same event: exactly one claims each key.
  const { results } = await deliver('idemgate', 'n8n', [200]);
  const dups = results.filter((r) => r.json && r.json.outcome === 'duplicate');
  check(dups.length === 450, 'intake: the other 450 answered duplicate', { duplicates: dups.length });
  await intakeStored(db, 'idemgate', 'n8n');
  // Same key, different payload: a clear 409.
  const mismatch = await post('/webhook/idemgate/intake', { event_id: 'n8n-intake-7', amount: 43 });
  check(mismatch.status === 409 && mismatch.json && mismatch.json.code === 'IG001' && /different payload/.test(mismatch.json.message || ''),
    'intake: a different payload under the same key answers 409 with IG001', { status: mismatch.status, body: mismatch.text });
  const noKey = await post('/webhook/idemgate/intake', { amount: 1 });
  check(noKey.status === 400 && noKey.json && noKey.json.error === 'bad_request' && /"key"/.test(noKey.json.message || ''),
    'intake: an event without a key answers 400 naming the field', { status: noKey.status, body: noKey.text });
}

const requestApproval = (eventId, subject) => draft('idemgate', eventId, subject, 10000);

async function approvals(db, browser) {
  const a1 = await requestApproval('n8n-approval-1', 'Refund 42 EUR, ticket 4471');
  check(a1.response.status === 202 && a1.response.json && a1.response.json.outcome === 'awaiting_human' && !a1.response.text.includes(a1.token || '@@'),
    'approval request: answered 202 awaiting_human, without the token', a1.response.text);
  check(!!a1.token && a1.token.length === 43, 'approval request: the link was sent to the notifier', a1.text);
  const before = await approvalSnapshot(db, 'n8n-approval-1');
  check(before && before.state === 'awaiting_human' && before.consumed_at === null, 'approval request: run awaiting_human', before);

  const page = await browser.newPage();
  page.setDefaultNavigationTimeout(90000);
  await page.setExtraHTTPHeaders({ [APPROVER_HEADER]: 'maria@example.com' });
  const url = `${N8N}/webhook/idemgate/approval?token=${encodeURIComponent(a1.token)}`;
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
  check(!!a2.token, 'approval request: a second approval with markup in its card', a2.text);
  res = await page.goto(`${N8N}/webhook/idemgate/approval?token=${encodeURIComponent(a2.token || 'x')}`, { waitUntil: 'load' });
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
  const done = await waitFor(async () => {
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

(async () => {
  let browser = null;
  await drive([
    ['intake', intake],
    ['approvals', async (db) => {
      browser = await puppeteer.launch({
        executablePath: process.env.CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
      });
      await approvals(db, browser);
    }],
    ['effect worker', worker],
    ['error workflow', (db) => errorWorkflow(db, {
      pathname: '/webhook/idemgate-test/fail', key: 'n8n-fail-1', workflowName: 'idemgate test: work that fails', failWith: 'fail()',
    })],
    ['alerts', (db) => alertRelay(db, { actor: 'n8n-test', label: 'alert relay' })],
  ], async () => { if (browser) await browser.close(); });
})();
