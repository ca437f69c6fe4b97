// test/requests.test.js — node parameters → the jsonb request each
// operation sends (npm test, after npm run build). Each case states the
// parameters a builder sets and the exact request and statement that
// reach idemgate.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { claimEffectsCall, ParameterError } = require('../dist/nodes/shared/requests');
const { buildCall } = require('../dist/nodes/Idemgate/resources');

const params = (p) => (name) => (name in p ? p[name] : null);
const OWNER = '6f1c1c9e-2d0b-4a51-9d7e-6d3f0a7c2b11';

test('run claim: key, payload object, workflow name, lease; one $1::jsonb parameter', () => {
	const c = buildCall('run', 'claim', params({
		key: 'evt-1', payload: { amount: 42, note: 'ok, checked' }, workflowName: 'intake', lease: '2 minutes', options: {},
	}));
	assert.equal(c.sql, 'SELECT * FROM idemgate.claim($1::jsonb)');
	assert.deepEqual(c.request, { key: 'evt-1', payload: { amount: 42, note: 'ok, checked' }, workflow: 'intake', lease: '2 minutes' });
});

test('run claim: payload given as JSON text (the JSON field) is parsed; empty lease and workflow are left out', () => {
	const c = buildCall('run', 'claim', params({ key: 'k', payload: '{"a": [1, 2]}', workflowName: '', lease: ' ' }));
	assert.deepEqual(c.request, { key: 'k', payload: { a: [1, 2] } });
});

test('run claim: an owner from the options is passed', () => {
	const c = buildCall('run', 'claim', params({ key: 'k', payload: {}, options: { owner: OWNER } }));
	assert.equal(c.request.owner, OWNER);
});

test('run claim: the origin is passed as the claim\'s origin; empty or blank is left out (origin NULL)', () => {
	const c = buildCall('run', 'claim', params({ key: 'k', payload: {}, workflowName: 'intake', origin: 'webhook:shop', options: {} }));
	assert.equal(c.sql, 'SELECT * FROM idemgate.claim($1::jsonb)');
	assert.deepEqual(c.request, { key: 'k', payload: {}, workflow: 'intake', origin: 'webhook:shop' });
	assert.ok(!('origin' in buildCall('run', 'claim', params({ key: 'k', payload: {}, origin: '' })).request));
	assert.ok(!('origin' in buildCall('run', 'claim', params({ key: 'k', payload: {}, origin: '  ' })).request));
	assert.throws(() => buildCall('run', 'claim', params({ key: 'k', payload: {}, origin: { a: 1 } })), (e) => e.parameter === 'origin');
});

test('origin belongs to claim only: other operations never send it', () => {
	const r = buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: 1, origin: 'webhook:shop' })).request;
	assert.ok(!('origin' in r));
});

test('run claim: an empty key is left out (idemgate answers 22004 naming it); bad JSON payload is a parameter error', () => {
	assert.deepEqual(buildCall('run', 'claim', params({ key: '', payload: {} })).request, { payload: {} });
	assert.throws(() => buildCall('run', 'claim', params({ key: 'k', payload: '{nope' })),
		(e) => e instanceof ParameterError && e.parameter === 'payload' && /not valid JSON/.test(e.message));
});

test('run claim: a missing payload is sent as null (idemgate answers 22004 naming it)', () => {
	assert.deepEqual(buildCall('run', 'claim', params({ key: 'k' })).request, { key: 'k', payload: null });
});

test('run complete: cas_transition to completed with the result; version as number', () => {
	const c = buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: 3, result: '{"answer": "done"}' }));
	assert.equal(c.sql, 'SELECT idemgate.cas_transition($1::jsonb) AS version');
	assert.deepEqual(c.request, { key: 'k', owner: OWNER, version: 3, new_state: 'completed', result: { answer: 'done' } });
});

test('version: a string of digits becomes a number; a huge one stays a string; "1.5" is refused', () => {
	assert.equal(buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: '7' })).request.version, 7);
	assert.equal(buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: '92233720368547758' })).request.version, '92233720368547758');
	assert.throws(() => buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: '1.5' })), (e) => e.parameter === 'version');
	assert.throws(() => buildCall('run', 'complete', params({ key: 'k', owner: OWNER, version: 1.5 })), (e) => e.parameter === 'version');
});

test('run complete: no owner is left out, never sent empty (idemgate answers 22004, not a silent loss)', () => {
	const r = buildCall('run', 'complete', params({ key: 'k', owner: '', version: 1 })).request;
	assert.ok(!('owner' in r));
});

test('run fail: error_class, error, retryable (default true)', () => {
	const c = buildCall('run', 'fail', params({ key: 'k', owner: OWNER, version: 2, errorClass: 'model_timeout', error: 'timed out, twice', retryable: false }));
	assert.equal(c.sql, 'SELECT idemgate.fail($1::jsonb) AS state');
	assert.deepEqual(c.request, { key: 'k', owner: OWNER, version: 2, error_class: 'model_timeout', error: 'timed out, twice', retryable: false });
	assert.equal(buildCall('run', 'fail', params({ key: 'k', owner: OWNER, version: 2, errorClass: 'x' })).request.retryable, true);
});

test('run renewLease: extend_by', () => {
	const c = buildCall('run', 'renewLease', params({ key: 'k', owner: OWNER, version: 2, extendBy: '10 minutes' }));
	assert.equal(c.sql, 'SELECT idemgate.renew_lease($1::jsonb) AS lease_expires_at');
	assert.deepEqual(c.request, { key: 'k', owner: OWNER, version: 2, extend_by: '10 minutes' });
});

test('approval request: effects, card, audience list, expires_in, requested_by', () => {
	const effects = { type: 'email', target: 'ana@example.com', payload: { subject: 'Hi, Ana' } };
	const c = buildCall('approval', 'request', params({
		key: 'k', owner: OWNER, version: 1, effects: JSON.stringify(effects), card: { title: 'Refund' },
		audience: ' maria@example.com, joan@example.com ,', expiresIn: '2 hours', options: { requestedBy: 'bot@example.com' },
	}));
	assert.equal(c.sql, 'SELECT * FROM idemgate.request_approval($1::jsonb)');
	assert.deepEqual(c.request, {
		key: 'k', owner: OWNER, version: 1, effects, expires_in: '2 hours', card: { title: 'Refund' },
		audience: ['maria@example.com', 'joan@example.com'], requested_by: 'bot@example.com',
	});
});

test('approval request: audience as an array or JSON array text; empty card and audience left out', () => {
	assert.deepEqual(buildCall('approval', 'request', params({ key: 'k', owner: OWNER, version: 1, effects: [], audience: ['a'] })).request.audience, ['a']);
	assert.deepEqual(buildCall('approval', 'request', params({ key: 'k', owner: OWNER, version: 1, effects: [], audience: '["a, b"]' })).request.audience, ['a, b']);
	const r = buildCall('approval', 'request', params({ key: 'k', owner: OWNER, version: 1, effects: [], card: '', audience: '' })).request;
	assert.ok(!('card' in r) && !('audience' in r));
});

test('approval peek and decide: the token only ever in the request, never in the statement', () => {
	const token = 'q2Zr3oYk1tYxW0p7Fh6JmVh9bq8sQGxJYb0yJx3WZyE';
	const peek = buildCall('approval', 'peek', params({ token }));
	assert.equal(peek.sql, 'SELECT * FROM idemgate.peek_approval($1::jsonb)');
	assert.deepEqual(peek.request, { token });
	const decide = buildCall('approval', 'decide', params({ token, decision: 'approve', approver: 'maria@example.com', reason: 'ok, checked' }));
	assert.equal(decide.sql, 'SELECT * FROM idemgate.consume_approval($1::jsonb)');
	assert.deepEqual(decide.request, { token, decision: 'approve', approver: 'maria@example.com', reason: 'ok, checked' });
	assert.ok(!peek.sql.includes(token) && !decide.sql.includes(token));
	assert.deepEqual(decide.notify, ['']);
	// Last in the JSON text: a JSON error in an earlier field (PostgreSQL logs
	// the text up to the error as CONTEXT) cannot show the token.
	assert.equal(Object.keys(decide.request).pop(), 'token');
	assert.ok(JSON.stringify(decide.request).indexOf(token) > JSON.stringify(decide.request).indexOf('ok, checked'));
});

test('approval decide: an empty approver is left out (idemgate answers 22004)', () => {
	assert.ok(!('approver' in buildCall('approval', 'decide', params({ token: 't', decision: 'approve', approver: '' })).request));
});

test('effect enqueue: effects, and the NOTIFY payloads are their distinct types', () => {
	const effects = [
		{ type: 'n8n_http', target: 'a', payload: {} },
		{ type: 'n8n_http', target: 'b', payload: {} },
		{ type: 'email', target: 'c', payload: {}, not_before: '2030-01-01T00:00:00Z' },
	];
	const c = buildCall('effect', 'enqueue', params({ key: 'k', owner: OWNER, version: '4', effects }));
	assert.equal(c.sql, 'SELECT * FROM idemgate.enqueue_effect($1::jsonb)');
	assert.deepEqual(c.request, { key: 'k', owner: OWNER, version: 4, effects });
	assert.deepEqual(c.notify, ['n8n_http', 'email']);
});

test('effect complete: effect_id, owner, provider_id, status from the options', () => {
	const id = '0b8f2c44-1b7a-4d8e-9d3e-2a1c3b4d5e6f';
	const c = buildCall('effect', 'complete', params({ effectId: id, owner: OWNER, providerId: 'prov-9', options: { httpStatus: 201 } }));
	assert.equal(c.sql, 'SELECT idemgate.complete_effect($1::jsonb) AS completed');
	assert.deepEqual(c.request, { effect_id: id, owner: OWNER, provider_id: 'prov-9', status: 201 });
	const bare = buildCall('effect', 'complete', params({ effectId: id, owner: OWNER, providerId: '', options: { httpStatus: 0 } }));
	assert.deepEqual(bare.request, { effect_id: id, owner: OWNER });
});

test('effect fail: error_class, error, retry_after, status', () => {
	const c = buildCall('effect', 'fail', params({
		effectId: 'e', owner: OWNER, errorClass: 'rate_limited', error: '429 slow down', retryAfter: '120', options: { httpStatus: 429 },
	}));
	assert.equal(c.sql, 'SELECT idemgate.fail_effect($1::jsonb) AS state');
	assert.deepEqual(c.request, { effect_id: 'e', owner: OWNER, error_class: 'rate_limited', error: '429 slow down', retry_after: '120', status: 429 });
});

test('an unknown operation is a parameter error', () => {
	assert.throws(() => buildCall('run', 'explode', params({})), (e) => e.parameter === 'operation');
});

test('trigger: claim_effects request (effect_type, batch, lease); empty lease left out', () => {
	const c = claimEffectsCall('n8n_http', 25, '2 minutes');
	assert.equal(c.sql, 'SELECT * FROM idemgate.claim_effects($1::jsonb)');
	assert.deepEqual(c.request, { effect_type: 'n8n_http', batch: 25, lease: '2 minutes' });
	assert.deepEqual(claimEffectsCall('x', 10, '').request, { effect_type: 'x', batch: 10 });
	assert.throws(() => claimEffectsCall('', 10, ''), (e) => e.parameter === 'effectType');
});
