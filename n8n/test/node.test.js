// test/node.test.js — the idemgate node's execute() with a fake database
// (npm test, after npm run build): what it sends, where claim's items go,
// bigints, and how a PostgreSQL error becomes a node error or, with
// "Continue on fail", an error item with code and message.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { NodeOperationError } = require('n8n-workflow');
const { backend, toJson } = require('../dist/nodes/shared/connection');
const { describe, description, errorItem } = require('../dist/nodes/shared/errors');
const { ParameterError } = require('../dist/nodes/shared/requests');
const { Idemgate } = require('../dist/nodes/Idemgate/Idemgate.node');
const { alertItem, intervalMs } = require('../dist/nodes/IdemgateTrigger/IdemgateTrigger.node');

const OWNER = '6f1c1c9e-2d0b-4a51-9d7e-6d3f0a7c2b11';

/** pgError makes what node-postgres throws for an ERROR from the server. */
function pgError(code, message, extra = {}) {
	const e = new Error(message);
	e.name = 'error';
	e.severity = 'ERROR';
	e.code = code;
	Object.assign(e, extra);
	return e;
}

/** fakeContext is the part of IExecuteFunctions the node uses. */
function fakeContext(node, itemParams, { continueOnFail = false, onError } = {}) {
	return {
		getInputData: () => itemParams.map((_, i) => ({ json: { i } })),
		getNodeParameter: (name, i, fallback) => (name in itemParams[i] ? itemParams[i][name] : fallback),
		getCredentials: async () => ({ host: '127.0.0.1', port: 5432, database: 'd', user: 'u', password: 'p', ssl: 'disable' }),
		continueOnFail: () => continueOnFail,
		getNode: () => ({ id: 'n1', name: 'idemgate', type: 'n8n-nodes-idemgate.idemgate', typeVersion: 1, position: [0, 0], parameters: {}, onError }),
	};
}

/** withBackend replaces the database for one test. */
async function withBackend(answer, fn) {
	const saved = { query: backend.query, notify: backend.notify };
	const sent = [];
	const notified = [];
	backend.query = async (cred, sql, request) => {
		sent.push({ sql, request, text: JSON.stringify(request) });
		return answer(request, sql);
	};
	backend.notify = async (cred, channel, payloads) => { notified.push({ channel, payloads }); };
	try {
		await fn(sent, notified);
	} finally {
		Object.assign(backend, saved);
	}
}

test('claim: claimed and recovered go to "Do the work", duplicate to "Already handled"', async () => {
	const outcome = { a: 'claimed', b: 'duplicate', c: 'recovered' };
	await withBackend((req) => [{
		outcome: outcome[req.key], idempotency_key: req.key, state: outcome[req.key] === 'duplicate' ? 'completed' : 'processing',
		lease_owner: outcome[req.key] === 'duplicate' ? null : OWNER, version: 1, result: outcome[req.key] === 'duplicate' ? { answer: 42 } : null,
	}], async (sent) => {
		const items = ['a', 'b', 'c'].map((key) => ({ resource: 'run', operation: 'claim', key, payload: { key }, workflowName: 'w', lease: '5 minutes' }));
		const out = await new Idemgate().execute.call(fakeContext(null, items));
		assert.equal(out.length, 2);
		assert.deepEqual(out[0].map((i) => i.json.idempotency_key), ['a', 'c']);
		assert.deepEqual(out[1].map((i) => [i.json.idempotency_key, i.json.result]), [['b', { answer: 42 }]]);
		assert.deepEqual(out[0].map((i) => i.pairedItem), [{ item: 0 }, { item: 2 }]);
		assert.deepEqual(sent.map((s) => s.sql), Array(3).fill('SELECT * FROM idemgate.claim($1::jsonb)'));
		assert.deepEqual(sent[0].request, { key: 'a', payload: { key: 'a' }, workflow: 'w', lease: '5 minutes' });
	});
});

test('claim: the Origin field reaches the claim request; the node description has it on Run → Claim only', async () => {
	await withBackend((req) => [{ outcome: 'claimed', idempotency_key: req.key, state: 'processing', lease_owner: OWNER, version: 1, result: null }], async (sent) => {
		await new Idemgate().execute.call(fakeContext(null, [{ resource: 'run', operation: 'claim', key: 'o1', payload: {}, origin: 'schedule:nightly' }]));
		assert.equal(sent[0].request.origin, 'schedule:nightly');
		assert.equal(JSON.parse(sent[0].text).origin, 'schedule:nightly');
	});
	const prop = new Idemgate().description.properties.filter((p) => p.name === 'origin');
	assert.equal(prop.length, 1);
	assert.equal(prop[0].displayName, 'Origin');
	assert.equal(prop[0].type, 'string');
	assert.equal(prop[0].default, '');
	assert.deepEqual(prop[0].displayOptions, { show: { resource: ['run'], operation: ['claim'] } });
});

test('a non-claim operation has one output; scalar results keep the key or effect id', async () => {
	await withBackend(() => [{ version: 4 }], async () => {
		const out = await new Idemgate().execute.call(fakeContext(null, [{ resource: 'run', operation: 'complete', key: 'k', owner: OWNER, version: 3, result: '{}' }]));
		assert.equal(out.length, 1);
		assert.deepEqual(out[0][0].json, { idempotency_key: 'k', version: 4 });
	});
	await withBackend(() => [{ state: 'pending' }], async () => {
		const out = await new Idemgate().execute.call(fakeContext(null, [{ resource: 'effect', operation: 'fail', effectId: 'e1', owner: OWNER, errorClass: 'unavailable', options: {} }]));
		assert.deepEqual(out[0][0].json, { effect_id: 'e1', state: 'pending' });
	});
});

test('IG001 (payload mismatch) is a node error whose description carries the SQLSTATE and message', async () => {
	const msg = 'idempotency key "k" was already used with a different payload';
	await withBackend(() => { throw pgError('IG001', msg, { hint: 'Use a new key, or supersede the run.' }); }, async () => {
		await assert.rejects(
			new Idemgate().execute.call(fakeContext(null, [{ resource: 'run', operation: 'claim', key: 'k', payload: { a: 2 } }])),
			(e) => {
				assert.ok(e instanceof NodeOperationError);
				assert.equal(e.message, msg);
				assert.match(e.description, /^SQLSTATE IG001: idempotency key "k" was already used with a different payload/);
				assert.match(e.description, /Hint: Use a new key/);
				assert.equal(e.context.code, 'IG001');
				assert.equal(e.context.itemIndex, 0);
				return true;
			});
	});
});

test('continue on fail (regular output): the error item has code and message; claim never puts it on "Do the work"', async () => {
	const msg = 'idempotency key "bad" was already used with a different payload';
	await withBackend((req) => {
		if (req.key === 'bad') throw pgError('IG001', msg, { hint: 'Use a new key.' });
		return [{ outcome: 'claimed', idempotency_key: req.key, state: 'processing', lease_owner: OWNER, version: 1, result: null }];
	}, async () => {
		const items = [{ resource: 'run', operation: 'claim', key: 'good', payload: {} }, { resource: 'run', operation: 'claim', key: 'bad', payload: {} }];
		const out = await new Idemgate().execute.call(fakeContext(null, items, { continueOnFail: true, onError: 'continueRegularOutput' }));
		assert.deepEqual(out[0].map((i) => i.json.idempotency_key), ['good']);
		assert.equal(out[1].length, 1);
		assert.deepEqual(out[1][0].json, { error: { code: 'IG001', message: msg, hint: 'Use a new key.' }, code: 'IG001', message: msg });
		assert.deepEqual(out[1][0].pairedItem, { item: 1 });
	});
});

test('continue on fail (error output): exactly {error, message}, the shape n8n routes to the Error output', async () => {
	const msg = 'idempotency key "bad" was already used with a different payload';
	await withBackend(() => { throw pgError('IG001', msg); }, async () => {
		const out = await new Idemgate().execute.call(fakeContext(null,
			[{ resource: 'run', operation: 'claim', key: 'bad', payload: {} }], { continueOnFail: true, onError: 'continueErrorOutput' }));
		const item = out[1][0];
		assert.deepEqual(item.json, { error: { code: 'IG001', message: msg }, message: msg });
		// n8n 1.x (WorkflowExecute.handleNodeErrorOutput) moves an item to the
		// Error output when it has an error object, or JSON of exactly these keys.
		assert.ok(item.error === undefined && Object.keys(item.json).length === 2 && item.json.error && item.json.message);
	});
});

test('continue on fail: a missing field (22004) of another operation goes to its one output', async () => {
	await withBackend(() => { throw pgError('22004', 'field "approver" must not be null'); }, async () => {
		const out = await new Idemgate().execute.call(fakeContext(null,
			[{ resource: 'approval', operation: 'decide', token: 't', decision: 'approve', approver: 'x' }], { continueOnFail: true }));
		assert.equal(out.length, 1);
		assert.equal(out[0][0].json.code, '22004');
		assert.equal(out[0][0].json.error.code, '22004');
		assert.equal(out[0][0].json.message, 'field "approver" must not be null');
	});
});

test('a parameter error (bad JSON) fails before any call; with continue on fail its item names the parameter, code null', async () => {
	await withBackend(() => { throw new Error('must not be called'); }, async (sent) => {
		const item = { resource: 'run', operation: 'complete', key: 'k', owner: OWNER, version: 1, result: '{not json' };
		await assert.rejects(new Idemgate().execute.call(fakeContext(null, [item])),
			(e) => e instanceof NodeOperationError && /"result" is not valid JSON/.test(e.message) && e.context.parameter === 'result');
		const out = await new Idemgate().execute.call(fakeContext(null, [item], { continueOnFail: true }));
		assert.equal(out[0][0].json.code, null);
		assert.equal(out[0][0].json.error.parameter, 'result');
		assert.equal(sent.length, 0);
	});
});

test('a connection error keeps the driver code', () => {
	const e = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
	assert.deepEqual(describe(e), { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' });
	assert.equal(description(describe(e)), 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5432');
	assert.equal(errorItem(e, 3, false).json.code, 'ECONNREFUSED');
	assert.equal(errorItem(e, 3, true).json.error.code, 'ECONNREFUSED');
	assert.equal(describe(new ParameterError('key', 'Parameter "key" is required')).parameter, 'key');
});

test('decide: an approval notifies the effects channel; an invalid decision does not', async () => {
	for (const [outcome, expect] of [['approved', 1], ['invalid', 0], ['rejected', 0]]) {
		await withBackend(() => [{ outcome, idempotency_key: outcome === 'invalid' ? null : 'k', effect_ids: null }], async (sent, notified) => {
			await new Idemgate().execute.call(fakeContext(null, [{ resource: 'approval', operation: 'decide', token: 't', decision: 'approve', approver: 'm' }]));
			assert.equal(notified.length, expect, outcome);
			if (expect) assert.deepEqual(notified[0], { channel: 'idemgate_effects', payloads: [''] });
		});
	}
});

test('enqueue: notifies with the effect types; lost ownership (NULL row) does not', async () => {
	await withBackend(() => [{ effect_ids: ['e1'], version: 2 }], async (sent, notified) => {
		await new Idemgate().execute.call(fakeContext(null, [{ resource: 'effect', operation: 'enqueue', key: 'k', owner: OWNER, version: 1, effects: { type: 'n8n_http', target: 't', payload: {} } }]));
		assert.deepEqual(notified, [{ channel: 'idemgate_effects', payloads: ['n8n_http'] }]);
	});
	await withBackend(() => [{ effect_ids: null, version: null }], async (sent, notified) => {
		await new Idemgate().execute.call(fakeContext(null, [{ resource: 'effect', operation: 'enqueue', key: 'k', owner: OWNER, version: 1, effects: { type: 'n8n_http', target: 't', payload: {} } }]));
		assert.equal(notified.length, 0);
	});
});

test('bigint columns become numbers when safe, strings of digits otherwise; timestamps ISO strings', () => {
	const fields = [{ name: 'version', dataTypeID: 20 }, { name: 'big', dataTypeID: 20 }, { name: 'at', dataTypeID: 1184 }, { name: 'r', dataTypeID: 3802 }];
	const row = toJson(fields, { version: '3', big: '9223372036854775807', at: new Date('2030-01-02T03:04:05Z'), r: { a: 1 } });
	assert.deepEqual(row, { version: 3, big: '9223372036854775807', at: '2030-01-02T03:04:05.000Z', r: { a: 1 } });
});

test('trigger helpers: alert payloads and lease intervals', () => {
	assert.deepEqual(alertItem('{"alert":"dead_letters","state":"firing"}').json, { alert: 'dead_letters', state: 'firing' });
	assert.deepEqual(alertItem('plain text').json, { payload: 'plain text' });
	assert.equal(intervalMs('2 minutes', 1), 120000);
	assert.equal(intervalMs('90', 1), 90000);
	assert.equal(intervalMs('1 hour', 1), 3600000);
	assert.equal(intervalMs('1 day 2 hours', 7), 7);
});

test('resources: each operation the editor offers has a call, and each call an operation (nodes/Idemgate/resources/)', () => {
	const resources = require('../dist/nodes/Idemgate/resources');
	const props = new Idemgate().description.properties;
	const offered = props.find((p) => p.name === 'resource').options.map((o) => o.value).sort();
	assert.deepEqual(offered, ['approval', 'effect', 'run']);
	for (const r of offered) {
		const field = props.filter((p) => p.name === 'operation' && p.displayOptions.show.resource.includes(r));
		assert.equal(field.length, 1, r);
		assert.deepEqual(field[0].options.map((o) => o.value).sort(), Object.keys(resources[r].operations).sort(), r);
		assert.ok(resources[r].fields.every((f) => f.displayOptions.show.resource.length === 1 && f.displayOptions.show.resource[0] === r), r);
	}
	assert.throws(() => resources.operationOf('run', 'constructor'), (e) => e instanceof ParameterError && e.parameter === 'operation');
});
