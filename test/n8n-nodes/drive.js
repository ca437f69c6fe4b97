// test/n8n-nodes/drive.js — drives the workflows built from the idemgate n8n
// nodes (examples/n8n-idemgate-nodes/) in a running n8n on loopback and checks what
// idemgate recorded. Started by test/n8n-nodes/run.sh through
// test/n8n/harness.sh, which sets the environment test/n8n/lib.js lists and
// counts the "ok - ..." / "not ok - ..." lines. What both workflow sets are
// checked for alike is in test/n8n/lib.js.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const {
  ID_HEADER, check, waitFor, sinkRequests, request, post,
  intake: deliver, intakeStored, requestApproval: draft, approvalSnapshot: snapshot, errorWorkflow, alertRelay, drive,
} = require('../n8n/lib');

const APPROVER = 'maria@example.com';
const OPERATOR = 'olga@example.com';
const tokens = [];	// every approval token seen: none may reach the server log

const hmac = (value) => crypto.createHmac('sha256', process.env.CSRF_SECRET).update(value).digest('hex');
const pgLog = () => fs.readFileSync(process.env.PG_LOG, 'utf8');

// ---------------------------------------------------------------------------
async function intake(db) {
  // 50 keys x 10 concurrent deliveries of the same event: exactly one claims each key.
  const { results } = await deliver('idemgate-nodes', 'nodes', [200, 202]);
  const dups = results.filter((r) => r.json && r.json.outcome === 'duplicate');
  const inProgress = dups.filter((r) => r.status === 202);
  check(dups.length === 450 && dups.every((r) => (r.status === 202) === (r.json.state === 'processing')),
    'intake: the other 450 answered duplicate (202 while the work runs, 200 with the result after)', { duplicates: dups.length });
  console.log(`# intake: ${inProgress.length} duplicates arrived while the work ran (202), ${dups.length - inProgress.length} after (200)`);
  check(inProgress.every((r) => r.headers.get('retry-after') === '5' && r.json.result === null),
    'intake: a duplicate while the work runs gets 202 with Retry-After and no result');
  const failedWork = await db.query("SELECT idempotency_key, details FROM idemgate.events WHERE idempotency_key LIKE 'nodes-intake-%' AND kind LIKE '%fail%'");
  if (failedWork.rows.length) console.log(`# intake: failures recorded: ${JSON.stringify(failedWork.rows.slice(0, 3))}`);
  await intakeStored(db, 'idemgate-nodes', 'nodes');
  const origins = await db.query(
    `SELECT (SELECT count(*)::int FROM idemgate.runs WHERE idempotency_key LIKE 'nodes-intake-%' AND origin = 'webhook:intake') AS runs,
            (SELECT count(*)::int FROM idemgate.events WHERE idempotency_key LIKE 'nodes-intake-%' AND kind = 'duplicate'
                AND details->>'origin' = 'webhook:intake') AS duplicates`);
  check(origins.rows[0].runs === 50 && origins.rows[0].duplicates > 0,
    "intake: Claim's Origin field reached the claim (every run and its duplicate events carry origin webhook:intake)", origins.rows[0]);
  const mismatch = await post('/webhook/idemgate-nodes/intake', { event_id: 'nodes-intake-7', amount: 43 });
  check(mismatch.status === 409 && mismatch.json && mismatch.json.code === 'IG001' && mismatch.json.error === 'payload_mismatch'
        && /different payload/.test(mismatch.json.message || ''),
  'intake: a different payload under the same key: 409 with the SQLSTATE IG001 from the node error', { status: mismatch.status, body: mismatch.text });
  const noKey = await post('/webhook/idemgate-nodes/intake', { amount: 1 });
  check(noKey.status === 400 && noKey.json && noKey.json.code === '22004' && /key/.test(noKey.json.message || ''),
    'intake: an event without a key: 400 with SQLSTATE 22004 naming the field', { status: noKey.status, body: noKey.text });
}

async function intakeFailures(db) {
  // The work fails on every delivery: retryable twice, then terminal; each answer says which.
  const answers = [];
  for (let i = 0; i < 5; i++) {
    const r = await post('/webhook/idemgate-nodes/intake', { event_id: 'nodes-fail-work', amount: 'not a number' });
    answers.push(r);
    if (r.json && (r.json.state === 'failed_terminal' || r.json.outcome === 'duplicate')) break;
  }
  const states = answers.map((r) => `${r.status} ${r.json && (r.json.state ?? r.json.outcome)}`);
  const last = answers[answers.length - 1];
  const retryable = answers.slice(0, -1);
  check(retryable.length >= 1 && retryable.every((r) => r.status === 500 && r.json.state === 'failed_retryable'
        && r.json.message === 'Recorded; a redelivery of the same event recovers the run.'),
  'intake: a failed work is recorded retryable and the answer says a redelivery recovers it', states);
  check(last.status === 500 && last.json && last.json.state === 'failed_terminal' && /Failed for good/.test(last.json.message)
        && !/redelivery of the same event recovers/.test(last.json.message),
  'intake: the failure that makes the run failed_terminal says so (not "a redelivery recovers the run")', last.json);
  const after = await post('/webhook/idemgate-nodes/intake', { event_id: 'nodes-fail-work', amount: 'not a number' });
  check(after.status === 200 && after.json && after.json.outcome === 'duplicate' && after.json.state === 'failed_terminal',
    'intake: a delivery after the terminal failure answers duplicate, failed_terminal', after.json);
  const dl = await db.query("SELECT kind, error_class, error FROM idemgate.dead_letters WHERE idempotency_key = 'nodes-fail-work'");
  check(dl.rows.length === 1 && dl.rows[0].kind === 'run' && dl.rows[0].error_class === 'n8n_error' && /amount/.test(dl.rows[0].error),
    'intake: the terminal failure left one dead letter with the error', dl.rows);
}

// ---------------------------------------------------------------------------
async function intakeEffects(db) {
  // 20 events whose work sends something: enqueue (automatic path), the effect
  // worker (idemgate Trigger) sends each; the provider answers 503 then 200.
  const keys = Array.from({ length: 20 }, (_, i) => `nodes-send-${i}`);
  const t0 = Date.now();
  const res = await Promise.all(keys.map((k) => post('/webhook/idemgate-nodes/intake', { event_id: k, amount: 1, notify: `${k}@example.com` })));
  check(res.every((r) => r.status === 202 && r.json && r.json.outcome === 'claimed' && Array.isArray(r.json.effect_ids) && r.json.effect_ids.length === 1),
    'effects: 20 events enqueued one effect each (202 with the effect id)', res.filter((r) => r.status !== 202).slice(0, 2).map((r) => r.text));
  const done = await waitFor(async () => {
    const r = await db.query("SELECT count(*) FILTER (WHERE state = 'completed')::int AS c, count(*)::int AS n FROM idemgate.outbox WHERE idempotency_key LIKE 'nodes-send-%'");
    return r.rows[0].c === 20 ? r.rows[0] : null;
  }, 90000, 500);
  check(!!done, 'effects: the trigger-driven worker completed all 20 effects', done);
  console.log(`# effects: 20 effects (each 503 then 200) completed ${((Date.now() - t0) / 1000).toFixed(1)} s after the intake`);
  await effectAccounting(db, "o.idempotency_key LIKE 'nodes-send-%'", 20, t0);
  const runs = await db.query("SELECT count(*)::int AS n FROM idemgate.runs WHERE idempotency_key LIKE 'nodes-send-%' AND state = 'completed' AND result ? 'effects'");
  check(runs.rows[0].n === 20, 'effects: the 20 runs completed through their effects', runs.rows[0]);
}

/** effectAccounting: every claim of an effect by the trigger was settled exactly once. */
async function effectAccounting(db, where, expected, t0) {
  const rows = (await db.query(
    `SELECT o.effect_id::text, o.state, o.attempts, o.provider_id, o.last_status, extract(epoch FROM o.created_at)::float8 AS created,
            (SELECT count(*)::int FROM idemgate.events e WHERE e.effect_id = o.effect_id AND e.kind = 'effect_failed') AS failures
       FROM idemgate.outbox o WHERE ${where}`)).rows;
  const sent = sinkRequests().filter((q) => q.path.startsWith('/seq/'));
  const bad = [];
  const firstLatency = [];
  for (const o of rows) {
    const mine = sent.filter((q) => q.idempotency_key === o.effect_id).sort((a, b) => a.n - b.n);
    const statuses = mine.map((q) => q.status).join(',');
    // Sent twice (503, then 200), failed once, completed once with the 200's provider id.
    if (statuses !== '503,200' || o.attempts !== 2 || o.failures !== 1 || o.state !== 'completed'
        || o.last_status !== 200 || o.provider_id !== `prov-${mine[1].n}`) {
      bad.push({ effect: o.effect_id, statuses, attempts: o.attempts, failures: o.failures, state: o.state, provider: o.provider_id });
    }
    if (mine[0]) firstLatency.push(mine[0].t - o.created);
  }
  check(rows.length === expected && bad.length === 0,
    `effects: each of the ${expected} effects was sent twice with its own Idempotency-Key, failed once (503), completed once (200)`, bad.slice(0, 3));
  firstLatency.sort((a, b) => a - b);
  const median = firstLatency[Math.floor(firstLatency.length / 2)];
  console.log(`# effects: first attempt after enqueue: median ${median.toFixed(2)} s, max ${firstLatency[firstLatency.length - 1].toFixed(2)} s (poll interval 10 s)`);
  check(median < 5, 'effects: the trigger is woken by NOTIFY (median first attempt well under the 10 s poll)', { median });
}

// ---------------------------------------------------------------------------
async function requestApproval(db, eventId, subject) {
  const a = await draft('idemgate-nodes', eventId, subject, 15000);
  if (a.token) tokens.push(a.token);
  return a;
}

async function approvals(db) {
  const a1 = await requestApproval(db, 'nodes-approval-1', 'Refund 42 EUR, ticket 4471');
  check(a1.response.status === 202 && a1.response.json && a1.response.json.outcome === 'awaiting_human' && !!a1.token
        && !a1.response.text.includes(a1.token),
  'approval request: 202 awaiting_human without the token; the link went to the notifier', a1.response.text);
  check(!!a1.token && a1.token.length === 43, 'approval request: the link carries a 43-character token');
  const before = await snapshot(db, 'nodes-approval-1');
  check(before && before.state === 'awaiting_human' && before.consumed_at === null, 'approval request: run awaiting_human', before);

  const url = `/webhook/idemgate-nodes/approval?token=${encodeURIComponent(a1.token)}`;
  const page = await request('GET', url, { headers: { [ID_HEADER]: APPROVER } });
  const csrf = (page.text.match(/name="csrf" value="([0-9a-f]+)"/) || [])[1];
  check(page.status === 200 && page.text.includes('Refund 42 EUR, ticket 4471') && page.text.includes('ana@example.com')
        && /value="approve"/.test(page.text) && /value="reject"/.test(page.text) && csrf === hmac(a1.token + '\n' + APPROVER),
  'approval page: GET (peek) renders the card, the effects, both decisions and the CSRF token', { status: page.status, text: page.text.slice(0, 300) });
  const anon = await request('GET', url);
  check(anon.status === 401 && !anon.text.includes('Refund 42'), 'approval page: GET without the identity header: 401, no card');
  const forged = await request('POST', url, { headers: { [ID_HEADER]: APPROVER }, form: { decision: 'approve', csrf: '0'.repeat(64) } });
  check(forged.status === 403, 'approval page: a POST without the page\'s CSRF token: 403', forged.status);
  const after = await snapshot(db, 'nodes-approval-1');
  check(JSON.stringify(after) === JSON.stringify(before), 'approval page: the GETs and the refused POST changed nothing', { before, after });

  // Ten concurrent decisions with the same valid form: exactly one decides.
  const tries = await Promise.all(Array.from({ length: 10 }, (_, i) =>
    request('POST', url, { headers: { [ID_HEADER]: APPROVER }, form: { decision: 'approve', csrf, reason: `ok, checked (tab ${i})` } })));
  const approved = tries.filter((r) => r.status === 200 && r.text.includes('Approved'));
  const already = tries.filter((r) => r.status === 409 && r.text.includes('already decided'));
  console.log(`# approval: 10 concurrent decisions → ${approved.length} approved, ${already.length} already decided`);
  check(approved.length === 1 && already.length === 9, 'approval page: 10 concurrent decisions: one Approved, nine "already decided" (409)',
    tries.map((r) => r.status));
  const decided = await snapshot(db, 'nodes-approval-1');
  check(decided.decision === 'approve' && decided.approver_subject === APPROVER && decided.decided === 1 && decided.effects === 1,
    'approval: decided once, by the header identity, one effect queued', decided);

  // The approved effect goes out through the trigger (503, then 200) and completes the run.
  const t0 = Date.now();
  const done = await waitFor(async () => {
    const r = await db.query("SELECT state FROM idemgate.runs WHERE idempotency_key = 'nodes-approval-1'");
    return r.rows[0].state === 'completed' ? r.rows[0] : null;
  }, 60000, 500);
  check(!!done, 'effect worker: the approved effect was delivered and the run completed', done);
  await effectAccounting(db, "o.idempotency_key = 'nodes-approval-1'", 1, t0);
  const dup = await post('/webhook/idemgate-nodes/draft', { event_id: 'nodes-approval-1', subject: 'Refund 42 EUR, ticket 4471', customer_email: 'ana@example.com', customer_name: 'Ana', source_url: 'https://crm.example/t/nodes-approval-1' });
  check(dup.status === 200 && dup.json && dup.json.outcome === 'duplicate' && dup.json.result && Array.isArray(dup.json.result.effects)
        && dup.json.result.effects[0].state === 'completed',
  'approval request: a duplicate of the delivered event gets the effects result', dup.text);

  // A decision idemgate refuses: a NUL in the reason (jsonb has no \u0000): the page
  // says it was not recorded, nothing changes, and the token is not in the server log.
  const a2 = await requestApproval(db, 'nodes-approval-2', 'Send the contract to Joan');
  const url2 = `/webhook/idemgate-nodes/approval?token=${encodeURIComponent(a2.token || 'x')}`;
  const csrf2 = hmac((a2.token || '') + '\n' + APPROVER);
  const logBefore = pgLog().length;
  const nul = await request('POST', url2, { headers: { [ID_HEADER]: APPROVER }, form: { decision: 'approve', csrf: csrf2, reason: 'fine\u0000really' } });
  // The server writes the error's lines one by one: wait for the STATEMENT line.
  const logged = await waitFor(() => { const l = pgLog().slice(logBefore); return /STATEMENT:/.test(l) ? l : null; }, 5000, 100) || pgLog().slice(logBefore);
  check(nul.status === 400 && /Your decision was not recorded/.test(nul.text) && /22P05/.test(nul.text),
    'approval page: a decision idemgate refuses (22P05) shows "not recorded" with the SQLSTATE, not a blank page', { status: nul.status, text: nul.text.slice(0, 400) });
  check(/ERROR:.*Unicode escape/.test(logged) && /CONTEXT:\s+JSON data/.test(logged)
        && /STATEMENT:\s+SELECT \* FROM idemgate\.consume_approval\(\$1::jsonb\)/.test(logged),
  'approval page: the server logged the failing decision with the JSON context and its statement ($1 only)', logged.slice(0, 800));
  check(a2.token && !logged.includes(a2.token), 'approval page: the approval token is not in the PostgreSQL server log after the failing decision');
  const long = await request('POST', url2, { headers: { [ID_HEADER]: APPROVER }, form: { decision: 'approve', csrf: csrf2, reason: 'é'.repeat(1001) } });
  check(long.status === 400 && /2002 bytes/.test(long.text), 'approval page: a 1001-character reason of 2002 bytes is refused by the page, in bytes', { status: long.status, text: long.text.slice(0, 300) });
  const s2 = await snapshot(db, 'nodes-approval-2');
  check(s2 && s2.state === 'awaiting_human' && s2.consumed_at === null, 'approval: the refused decisions decided nothing', s2);
  const reject = await request('POST', url2, { headers: { [ID_HEADER]: APPROVER }, form: { decision: 'reject', csrf: csrf2, reason: 'wrong contract, ask Joan' } });
  const s2b = await snapshot(db, 'nodes-approval-2');
  check(reject.status === 200 && reject.text.includes('Rejected') && s2b.state === 'failed_terminal' && s2b.effects === 0,
    'approval page: a rejection: "Rejected", run failed_terminal, nothing queued', { status: reject.status, s2b });

  const bogus = await request('GET', '/webhook/idemgate-nodes/approval?token=not-a-token', { headers: { [ID_HEADER]: APPROVER } });
  check(bogus.status === 404 && bogus.text.includes('not valid'), 'approval page: an unknown token shows "not valid" (404)', bogus.status);
}

// ---------------------------------------------------------------------------
async function operatorConsole(db) {
  // Fixtures, as an operator would meet them: one effect dead-lettered
  // (rejected), two whose delivery is unknown (500, timeout after send).
  const run = (await db.query("SELECT lease_owner::text, version FROM idemgate.claim('nodes-console-1', '{\"n\": 1}', '5 minutes', 'console-test')")).rows[0];
  const enq = (await db.query(`SELECT effect_ids FROM idemgate.enqueue_effect('nodes-console-1', $1, $2,
    '[{"type": "console_test", "target": "a", "payload": {}}, {"type": "console_test", "target": "b", "payload": {}}, {"type": "console_test", "target": "c", "payload": {}}]')`,
  [run.lease_owner, run.version])).rows[0];
  const claimed = (await db.query("SELECT effect_id::text, target, lease_owner::text FROM idemgate.claim_effects('console_test', 3)")).rows;
  if (claimed.length !== 3) throw new Error(`fixtures: enqueued ${JSON.stringify(enq)}, claimed ${JSON.stringify(claimed)}`);
  const by = Object.fromEntries(claimed.map((r) => [r.target, r]));
  await db.query("SELECT idemgate.fail_effect($1, $2, 'rejected', 'HTTP 422 invalid recipient')", [by.a.effect_id, by.a.lease_owner]);
  await db.query("SELECT idemgate.fail_effect($1, $2, 'server_error', 'HTTP 500')", [by.b.effect_id, by.b.lease_owner]);
  await db.query("SELECT idemgate.fail_effect($1, $2, 'timeout_after_send', 'timed out after 10 s')", [by.c.effect_id, by.c.lease_owner]);
  const dl = (await db.query('SELECT id FROM idemgate.dead_letters WHERE effect_id = $1', [by.a.effect_id])).rows[0];

  const hdr = { [ID_HEADER]: OPERATOR };
  const page = await request('GET', '/webhook/idemgate-nodes/console', { headers: hdr });
  const csrf = (page.text.match(/name="csrf" value="([0-9a-f]+)"/) || [])[1];
  check(page.status === 200 && page.text.includes(`data-id="${dl.id}"`) && page.text.includes(`data-effect="${by.b.effect_id}"`)
        && page.text.includes(`data-effect="${by.c.effect_id}"`) && csrf === hmac('idemgate console\n' + OPERATOR),
  'operator console: lists the dead letter and both unknown effects, with a CSRF token', { status: page.status, text: page.text.slice(0, 400) });
  const anon = await request('GET', '/webhook/idemgate-nodes/console');
  check(anon.status === 401 && !anon.text.includes(by.b.effect_id), 'operator console: without the identity header: 401, nothing listed');
  const forged = await request('POST', '/webhook/idemgate-nodes/console', { headers: hdr, form: { action: 'reinject', id: String(dl.id), csrf: 'f'.repeat(64) } });
  check(forged.status === 403, 'operator console: a POST without the CSRF token: 403', forged.status);

  const act = (form) => request('POST', '/webhook/idemgate-nodes/console', { headers: hdr, form: { csrf, ...form } });
  const re1 = await act({ action: 'reinject', id: String(dl.id), note: '' });
  const re2 = await act({ action: 'reinject', id: String(dl.id), note: '' });
  const eff = (await db.query('SELECT state, attempts FROM idemgate.outbox WHERE effect_id = $1', [by.a.effect_id])).rows[0];
  check(re1.status === 200 && /was reinjected/.test(re1.text) && eff.state === 'pending' && eff.attempts === 0,
    'operator console: Reinject puts the dead-lettered effect back to pending', { status: re1.status, eff, text: re1.text.slice(0, 300) });
  check(re2.status === 409 && /already reinjected/.test(re2.text), 'operator console: a second Reinject says it was already reinjected (409)', re2.status);
  const res = await act({ action: 'delivered', effect_id: by.b.effect_id, note: 'provider confirmed msg 77' });
  const can = await act({ action: 'cancel', effect_id: by.c.effect_id, note: 'customer withdrew, call, not mail' });
  const states = Object.fromEntries((await db.query('SELECT target, state FROM idemgate.outbox WHERE effect_id = ANY($1::uuid[])',
    [[by.b.effect_id, by.c.effect_id]])).rows.map((r) => [r.target, r.state]));
  check(res.status === 200 && /is now completed/.test(res.text) && states.b === 'completed', 'operator console: "It was delivered" resolves the unknown effect as completed', { status: res.status, states });
  check(can.status === 200 && /is now cancelled/.test(can.text) && states.c === 'cancelled', 'operator console: Cancel cancels the other unknown effect', { status: can.status, states });
  const again = await act({ action: 'cancel', effect_id: by.c.effect_id, note: '' });
  check(again.status === 409 && /Not done/.test(again.text) && /cancel/i.test(again.text),
    'operator console: cancelling it again is refused with idemgate\'s message (409)', { status: again.status, text: again.text.slice(0, 600) });
  const audit = (await db.query(
    "SELECT kind, actor, details FROM idemgate.events WHERE effect_id = ANY($1::uuid[]) AND actor IS NOT NULL ORDER BY id",
    [[by.a.effect_id, by.b.effect_id, by.c.effect_id]])).rows;
  const kinds = audit.map((e) => `${e.kind}:${e.actor}`);
  check(['effect_reinjected', 'effect_resolved', 'effect_cancelled'].every((k) => kinds.includes(`${k}:${OPERATOR}`))
        && audit.every((e) => e.actor === OPERATOR),
  'operator console: every action is audited with the operator\'s identity as actor', kinds);
  const after = await request('GET', '/webhook/idemgate-nodes/console', { headers: hdr });
  check(after.status === 200 && !after.text.includes(`data-id="${dl.id}"`) && after.text.includes('id="no-unknown"'),
    'operator console: afterwards nothing is left to act on', after.text.slice(0, 300));
}

function tokensNotLogged() {
  const log = pgLog();
  const found = tokens.filter((t) => log.includes(t));
  check(tokens.length >= 2 && found.length === 0, `server log: none of the ${tokens.length} approval tokens appears in the PostgreSQL log`, { found: found.length });
}

drive([
  ['intake', intake],
  ['intake failures', intakeFailures],
  ['effects', intakeEffects],
  ['approvals', approvals],
  ['error workflow', (db) => errorWorkflow(db, {
    pathname: '/webhook/idemgate-nodes-test/fail', key: 'nodes-fail-1', workflowName: 'idemgate nodes test: work that fails', failWith: "the node's fail",
  })],
  ['operator console', operatorConsole],
  ['alerts', (db) => alertRelay(db, { actor: 'n8n-nodes-test', label: 'alert relay (idemgate Trigger, alert)' })],
], async () => tokensNotLogged());
