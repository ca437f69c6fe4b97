// nodes/shared/connection.ts — PostgreSQL connections from n8n's own
// `postgres` credential, with node-postgres (pg).
//
// One pool per credential, kept while the credential stays the same (n8n
// loads a node type once), so a busy webhook workflow does not open a
// connection per execution; an edited credential's old pool is ended. Statements are sent with the extended protocol
// and an unnamed statement: the parameter travels in a Bind message, never
// in the statement text, and nothing is prepared by name, so PgBouncer in
// transaction mode works too.
import { Client, Pool } from 'pg';
import type { ClientConfig, FieldDef, PoolConfig, QueryResult } from 'pg';
import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import type { Json, JsonObject } from './requests';

const INT8_OID = 20;

/** clientConfig maps n8n's postgres credential to node-postgres' configuration. */
export function clientConfig(c: ICredentialDataDecryptedObject): ClientConfig {
	if (c.sshTunnel === true) {
		throw new Error('The idemgate nodes do not support SSH tunnels: connect directly, or through a tunnel started outside n8n');
	}
	const cfg: ClientConfig = {
		host: (c.host as string) || 'localhost',
		port: Number(c.port) || 5432,
		database: (c.database as string) || undefined,
		user: (c.user as string) || undefined,
		password: (c.password as string) || undefined,
		application_name: 'n8n-nodes-idemgate',
		// Also the wait for a free pooled connection when a busy workflow uses all.
		connectionTimeoutMillis: 60000,
	};
	const ssl = (c.ssl as string) || 'disable';
	if (ssl !== 'disable') cfg.ssl = { rejectUnauthorized: c.allowUnauthorizedCerts !== true };
	return cfg;
}

/**
 * The pools, by where they connect as whom (host, port, database, user):
 * each with the rest of its credential (password, TLS, size). A credential
 * edited in n8n (a rotated password, another pool size) arrives with the
 * same identity and other settings: its old pool is ended, not left open
 * beside the new one. Idle connections close after 30 s, so an unused
 * pool holds no server connection for long.
 */
const pools = new Map<string, { settings: string; pool: Pool }>();

/** poolFor returns the pool of a credential (created on first use). */
export function poolFor(c: ICredentialDataDecryptedObject): Pool {
	const cfg = clientConfig(c);
	const identity = JSON.stringify([cfg.host, cfg.port, cfg.database, cfg.user]);
	const settings = JSON.stringify([cfg.password, cfg.ssl ?? null, c.maxConnections]);
	const known = pools.get(identity);
	if (known && known.settings === settings) return known.pool;
	if (known) {
		pools.delete(identity);
		known.pool.end().catch(() => {
			/* its connections are gone either way */
		});
	}
	const pc: PoolConfig = { ...cfg, max: Number(c.maxConnections) || 20, idleTimeoutMillis: 30000 };
	const pool = new Pool(pc);
	pool.on('error', () => {
		/* an idle connection died (server restart): the pool replaces it */
	});
	pools.set(identity, { settings, pool });
	return pool;
}

/** endPools ends every pool (tests; a host that unloads the nodes). */
export async function endPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	await Promise.all(all.map((p) => p.pool.end().catch(() => undefined)));
}

/**
 * toJson converts a result row: bigint columns (version) become numbers when
 * they are safe integers (else they stay strings of digits, which
 * idemgate's jsonb forms accept back); uuid, text and timestamps stay
 * strings, jsonb values stay objects.
 */
export function toJson(fields: FieldDef[], row: { [key: string]: unknown }): JsonObject {
	const out: JsonObject = {};
	for (const f of fields) {
		let v = row[f.name];
		if (f.dataTypeID === INT8_OID && typeof v === 'string') {
			const n = Number(v);
			if (Number.isSafeInteger(n)) v = n;
		} else if (v instanceof Date) v = v.toISOString();
		out[f.name] = (v === undefined ? null : v) as Json;
	}
	return out;
}

/** rows returns a result's rows as JSON objects. */
export const rows = (r: QueryResult) => r.rows.map((row) => toJson(r.fields, row));

/**
 * backend is the database side of the nodes, one object so that the unit
 * tests can put a fake in its place.
 */
export const backend = {
	/** query runs one statement with its single jsonb parameter. */
	async query(c: ICredentialDataDecryptedObject, sql: string, request: JsonObject): Promise<JsonObject[]> {
		const r = await poolFor(c).query({ text: sql, values: [JSON.stringify(request)] });
		return rows(r);
	},
	/** notify wakes the triggers waiting for effects (best effort). */
	async notify(c: ICredentialDataDecryptedObject, channel: string, payloads: string[]): Promise<void> {
		for (const p of payloads) {
			await poolFor(c).query({ text: 'SELECT pg_catalog.pg_notify($1, $2)', values: [channel, p] });
		}
	},
	/** connect opens one dedicated connection (a trigger's LISTEN). */
	async connect(c: ICredentialDataDecryptedObject): Promise<Client> {
		const client = new Client(clientConfig(c));
		await client.connect();
		return client;
	},
};
