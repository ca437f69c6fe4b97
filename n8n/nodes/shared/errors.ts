// nodes/shared/errors.ts — a failed call → an n8n node error, or with
// "Continue on fail" an error item. idemgate's errors are PostgreSQL
// errors with a SQLSTATE (IG001 payload mismatch, IG002 illegal
// transition, 22004 missing field, 22023 bad field, 42501 not allowed,
// ...); n8n's own Postgres node drops that code, these nodes keep it.
import { NodeOperationError } from 'n8n-workflow';
import type { INode, INodeExecutionData } from 'n8n-workflow';
import { ParameterError } from './requests';

/** Failure is what an error item carries. */
export interface Failure {
	/** SQLSTATE of a database error ("IG001"), or a driver code ("ECONNREFUSED"), or null. */
	code: string | null;
	message: string;
	detail?: string;
	hint?: string;
	/** The node parameter at fault, for errors found before any call. */
	parameter?: string;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** describe reads a thrown value: a pg DatabaseError, a driver error, a ParameterError. */
export function describe(e: unknown): Failure {
	if (e instanceof ParameterError) return { code: null, message: e.message, parameter: e.parameter };
	const err = (e ?? {}) as { code?: unknown; message?: unknown; detail?: unknown; hint?: unknown };
	const f: Failure = {
		code: typeof err.code === 'string' && err.code !== '' ? err.code : null,
		message: typeof err.message === 'string' && err.message !== '' ? err.message : String(e),
	};
	if (typeof err.detail === 'string' && err.detail !== '') f.detail = err.detail;
	if (typeof err.hint === 'string' && err.hint !== '') f.hint = err.hint;
	return f;
}

/** isSqlState tells a SQLSTATE from a driver's error code. */
export const isSqlState = (code: string | null) => code !== null && SQLSTATE.test(code);

/** description is the error's text for n8n's error panel: SQLSTATE, message, detail, hint. */
export function description(f: Failure): string {
	const parts = [];
	if (f.code !== null) parts.push(isSqlState(f.code) ? `SQLSTATE ${f.code}: ${f.message}` : `${f.code}: ${f.message}`);
	else parts.push(f.message);
	if (f.detail) parts.push(`Detail: ${f.detail}`);
	if (f.hint) parts.push(`Hint: ${f.hint}`);
	return parts.join('\n');
}

/** nodeError turns a failure into the node error n8n shows and error workflows receive. */
export function nodeError(node: INode, e: unknown, itemIndex: number): NodeOperationError {
	const f = describe(e);
	const err = new NodeOperationError(node, f.message, { description: description(f), itemIndex });
	err.context.code = f.code;
	if (f.parameter) err.context.parameter = f.parameter;
	return err;
}

/**
 * errorItem is the item "Continue on fail" passes on, in one of two shapes
 * because of how n8n 1.x routes errors:
 *
 * - "Continue (regular output)": `{error, code, message}`: `code` is the
 *   SQLSTATE ("IG001") or the driver's code, `message` idemgate's message,
 *   `error` the same as an object (with `detail` and `hint` when given).
 * - "Continue (using error output)": n8n moves an item to the Error output
 *   only when its JSON is exactly `{error, message}` (or the item carries an
 *   error object, and then n8n keeps nothing but the message), and merges
 *   it into the input item. So `{error: {code, message, detail, hint},
 *   message}`.
 *
 * `$json.error.code` and `$json.message` work in both.
 */
export function errorItem(e: unknown, itemIndex: number, errorOutput: boolean): INodeExecutionData {
	const f = describe(e);
	const error: { [key: string]: string | null } = { code: f.code, message: f.message };
	if (f.detail) error.detail = f.detail;
	if (f.hint) error.hint = f.hint;
	if (f.parameter) error.parameter = f.parameter;
	const json = errorOutput ? { error, message: f.message } : { error, code: f.code, message: f.message };
	return { json, pairedItem: { item: itemIndex } };
}
