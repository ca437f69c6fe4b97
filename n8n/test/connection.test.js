// test/connection.test.js — the pools of nodes/shared/connection.ts (npm
// test, after npm run build): one per credential, and an edited
// credential's old pool ended rather than left open. No server is needed:
// node-postgres opens a pool's connections on first use.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
test('poolFor: one pool per credential; an edited credential ends its old pool', async () => {
	const { poolFor, endPools } = require('../dist/nodes/shared/connection');
	const cred = { host: '127.0.0.1', port: 5432, database: 'app', user: 'n8n_client', password: 'one', maxConnections: 5 };
	const first = poolFor(cred);
	assert.equal(poolFor({ ...cred }), first, 'the same credential: the same pool');
	const other = poolFor({ ...cred, user: 'n8n_operator' });
	assert.notEqual(other, first, 'another user: its own pool');
	const rotated = poolFor({ ...cred, password: 'two' });
	assert.notEqual(rotated, first, 'a rotated password: a new pool');
	await new Promise((resolve) => setImmediate(resolve));
	assert.equal(first.ended, true, 'the old pool of the edited credential is ended');
	assert.equal(other.ended, false, 'the other credential\'s pool stays');
	await endPools();
	assert.equal(rotated.ended, true);
	assert.equal(other.ended, true);
});
