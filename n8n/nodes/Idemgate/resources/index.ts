// nodes/Idemgate/resources/index.ts — the idemgate node's resources by the
// value of its Resource field, and the call one item's parameters make
// (what Idemgate.node.ts runs, and test/requests.test.js checks).
import { options, ParameterError } from '../../shared/requests';
import type { Call, Get } from '../../shared/requests';
import { approval } from './approval';
import type { Operation, Resource } from './common';
import { effect } from './effect';
import { run } from './run';

export { approval, effect, run };

const resources: { [name: string]: Resource } = { approval, effect, run };

/** operationOf finds an operation of a resource, as docs/n8n.md lists them. */
export function operationOf(resource: string, operation: string): Operation {
	const r = Object.hasOwn(resources, resource) ? resources[resource] : undefined;
	const op = r && Object.hasOwn(r.operations, operation) ? r.operations[operation] : undefined;
	if (!op) throw new ParameterError('operation', `Unknown operation "${operation}" of resource "${resource}"`);
	return op;
}

/**
 * buildCall maps one item's parameters to the call: resource and operation
 * to their jsonb form, whose field names are the typed arguments' names.
 */
export function buildCall(resource: string, operation: string, get: Get): Call {
	const opt = options(get);
	return operationOf(resource, operation).call(get, opt);
}
