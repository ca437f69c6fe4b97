// nodes/shared/requests.ts — what turns node parameters into the one jsonb
// request of an idemgate call: the readers of each kind of parameter, and
// the trigger's own call. Each resource of the idemgate node maps its
// operations with them (nodes/Idemgate/resources/). Pure: no n8n context,
// no database, so the unit tests (test/requests.test.js) check every
// operation's mapping directly.
//
// Every call is `SELECT ... FROM idemgate.<f>($1::jsonb)` with ONE bind
// parameter, the request object as JSON text (docs/n8n.md, "One
// parameter"). Nothing a user typed is ever pasted into the statement, so
// an approval token never appears in statement text or in the server log.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** Get reads one node parameter (undefined when the operation has none). */
export type Get = (name: string) => unknown;

/** Call is what the node sends: statement text, request, and what to NOTIFY. */
export interface Call {
	sql: string;
	request: JsonObject;
	/** After success, NOTIFY this channel with these payloads (the trigger wakes). */
	notify?: string[];
}

/** The channel the trigger LISTENs on for new effects (docs/n8n.md). */
export const EFFECTS_CHANNEL = 'idemgate_effects';
/** The channel idemgate's publish_alerts() NOTIFYs. */
export const ALERTS_CHANNEL = 'idemgate_alerts';

/** ParameterError is a parameter the node cannot turn into a request. */
export class ParameterError extends Error {
	constructor(
		public parameter: string,
		message: string,
	) {
		super(message);
		this.name = 'ParameterError';
	}
}

const isEmpty = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/** text returns a string parameter, or undefined when left empty. */
export function text(get: Get, name: string): string | undefined {
	const v = get(name);
	if (isEmpty(v)) return undefined;
	if (typeof v === 'string') return v;
	if (typeof v === 'number' || typeof v === 'boolean') return String(v);
	throw new ParameterError(name, `Parameter "${name}" must be text, got ${typeof v}`);
}

/**
 * required returns a string parameter the call needs. An empty one is left
 * out of the request rather than refused here: idemgate answers 22004
 * naming the field, an error with a SQLSTATE the workflow can branch on
 * (an event without a key is the sender's mistake, a 400).
 */
export const required = text;

/**
 * bigint returns a bigint parameter (version): a JSON number, or a string of
 * digits (as idemgate's Postgres-node examples pass it) turned into a number
 * when it is a safe integer; idemgate's jsonb forms accept both.
 */
export function bigint(get: Get, name: string): number | string | undefined {
	const v = get(name);
	if (isEmpty(v)) return undefined;
	if (typeof v === 'number') {
		if (!Number.isInteger(v)) throw new ParameterError(name, `Parameter "${name}" must be an integer, got ${v}`);
		return v;
	}
	if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v)) {
		const n = Number(v);
		return Number.isSafeInteger(n) ? n : v.trim();
	}
	throw new ParameterError(name, `Parameter "${name}" must be an integer, got ${JSON.stringify(v)}`);
}

/**
 * json returns a JSON parameter: n8n gives the text of a JSON field, or the
 * value itself when the field is an expression such as {{ $json.body }}.
 */
export function json(get: Get, name: string): Json | undefined {
	const v = get(name);
	if (v === undefined || v === null) return undefined;
	if (typeof v === 'string') {
		if (v.trim() === '') return undefined;
		try {
			return JSON.parse(v) as Json;
		} catch (e) {
			throw new ParameterError(name, `Parameter "${name}" is not valid JSON: ${(e as Error).message}`);
		}
	}
	return JSON.parse(JSON.stringify(v)) as Json;
}

/** list returns a list parameter: an array, or comma-separated text. */
export function list(get: Get, name: string): string[] | undefined {
	const v = get(name);
	if (isEmpty(v)) return undefined;
	let items: unknown[];
	if (Array.isArray(v)) items = v;
	else if (typeof v === 'string') {
		const t = v.trim();
		if (t.startsWith('[')) {
			try {
				items = JSON.parse(t) as unknown[];
			} catch (e) {
				throw new ParameterError(name, `Parameter "${name}" is not a valid JSON array: ${(e as Error).message}`);
			}
			if (!Array.isArray(items)) throw new ParameterError(name, `Parameter "${name}" must be a list`);
		} else items = t.split(',');
	} else throw new ParameterError(name, `Parameter "${name}" must be a list of text`);
	const out = items.map((i) => String(i).trim()).filter((i) => i !== '');
	return out.length ? out : undefined;
}

/** bool returns a boolean parameter. */
export function bool(get: Get, name: string): boolean | undefined {
	const v = get(name);
	if (isEmpty(v)) return undefined;
	if (typeof v === 'boolean') return v;
	if (v === 'true') return true;
	if (v === 'false') return false;
	throw new ParameterError(name, `Parameter "${name}" must be true or false, got ${JSON.stringify(v)}`);
}

/** int returns an integer parameter (an HTTP status, a batch size). */
export function int(get: Get, name: string): number | undefined {
	const v = get(name);
	if (isEmpty(v) || v === 0) return undefined;
	const n = typeof v === 'string' ? Number(v) : v;
	if (typeof n !== 'number' || !Number.isInteger(n)) {
		throw new ParameterError(name, `Parameter "${name}" must be an integer, got ${JSON.stringify(v)}`);
	}
	return n;
}

/** compact drops undefined fields: an omitted field takes idemgate's default. */
export function compact(o: { [key: string]: Json | undefined }): JsonObject {
	const out: JsonObject = {};
	for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
	return out;
}

/** effectTypes lists the distinct types of an effects parameter (for NOTIFY). */
export function effectTypes(effects: Json | undefined): string[] {
	const all = Array.isArray(effects) ? effects : [effects];
	const types = new Set<string>();
	for (const e of all) {
		if (e && typeof e === 'object' && !Array.isArray(e) && typeof e.type === 'string') types.add(e.type);
	}
	return [...types];
}

/** ownerChecked is the (key, owner, version) triple that owner-checked calls carry. */
export function ownerChecked(get: Get) {
	return { key: required(get, 'key'), owner: required(get, 'owner'), version: bigint(get, 'version') };
}

/** options reads the fields of the node's "Options" collection. */
export function options(get: Get): Get {
	const o = get('options');
	const obj = o && typeof o === 'object' ? (o as { [key: string]: unknown }) : {};
	return (name: string) => obj[name];
}

/** claimEffectsCall is the trigger's pull: due effects of one type. */
export function claimEffectsCall(effectType: string, batch?: number, lease?: string): Call {
	if (!effectType || effectType.trim() === '') throw new ParameterError('effectType', 'Parameter "effectType" is required');
	return {
		sql: 'SELECT * FROM idemgate.claim_effects($1::jsonb)',
		request: compact({ effect_type: effectType, batch: batch || undefined, lease: lease?.trim() ? lease : undefined }),
	};
}
