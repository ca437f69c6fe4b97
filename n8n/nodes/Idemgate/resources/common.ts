// nodes/Idemgate/resources/common.ts — what the idemgate node's resources
// (run.ts, approval.ts, effect.ts) are made of: a resource's operation
// list, its fields and, per operation, the call it makes; and the fields
// that owner-checked operations of every resource share.
import type { INodeProperties } from 'n8n-workflow';
import type { Call, Get, JsonObject } from '../../shared/requests';

/** Operation is one operation's call, and when its success wakes the trigger. */
export interface Operation {
	/** The call for one item's parameters (get), opt reading its Options collection. */
	call: (get: Get, opt: Get) => Call;
	/** Whether the answer row says effects were queued (NOTIFY the call's channel). */
	wakes?: (row: JsonObject) => boolean;
}

/** Resource is one value of the node's Resource field. */
export interface Resource {
	/** The Operation field shown for this resource. */
	operation: INodeProperties;
	/** The resource's fields, in the order the editor shows them. */
	fields: INodeProperties[];
	operations: { [operation: string]: Operation };
}

/** show is the displayOptions of a field of some operations of one resource. */
export const show = (resource: string, ...operation: string[]) => ({ show: { resource: [resource], operation } });

/** operationField is a resource's Operation field. */
export function operationField(resource: string, options: INodeProperties['options'], defaultOperation: string): INodeProperties {
	return {
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: [resource] } },
		options,
		default: defaultOperation,
	};
}

/** owned is the (key, owner, version) fields of owner-checked operations. */
export const owned = (resource: string, ...operation: string[]): INodeProperties[] => [
	{
		displayName: 'Idempotency Key',
		name: 'key',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $('idemgate').item.json.idempotency_key }}",
		description: 'The key of the run, as the claim returned it',
		displayOptions: show(resource, ...operation),
	},
	{
		displayName: 'Lease Owner',
		name: 'owner',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $('idemgate').item.json.lease_owner }}",
		description: 'The lease owner the claim returned (lease_owner): proves this execution still owns the run',
		displayOptions: show(resource, ...operation),
	},
	{
		displayName: 'Version',
		name: 'version',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $('idemgate').item.json.version }}",
		description: 'The run version the claim (or the last owner-checked call) returned',
		displayOptions: show(resource, ...operation),
	},
];

/** effectsField is the Effects field of the operations that queue effects. */
export const effectsField = (resource: string, operation: string): INodeProperties => ({
	displayName: 'Effects',
	name: 'effects',
	type: 'json',
	required: true,
	default: '{\n  "type": "",\n  "target": "",\n  "payload": {}\n}',
	description:
		'One effect or an array of them: {"type", "target", "payload"} (optional "not_before"). Approval: queued only if approved.',
	displayOptions: show(resource, operation),
});
