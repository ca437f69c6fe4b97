// nodes/Idemgate/Idemgate.node.ts — the idemgate node: runs (claim,
// complete, fail, renew lease), approvals (request, peek, decide) and
// effects (enqueue, complete, fail), each one call of idemgate's jsonb form
// with one bind parameter (nodes/shared/requests.ts). Each resource's
// fields and calls are in its own file (resources/run.ts, approval.ts,
// effect.ts; resources/index.ts finds an operation's call); this file
// assembles the fields and runs the calls. Claim has two outputs: "Do the
// work" (claimed, recovered) and "Already handled" (duplicate).
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { backend } from '../shared/connection';
import { errorItem, nodeError } from '../shared/errors';
import { EFFECTS_CHANNEL } from '../shared/requests';
import type { JsonObject } from '../shared/requests';
import { approval, buildCall, effect, operationOf, run } from './resources';

const properties: INodeProperties[] = [
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Approval', value: 'approval', description: 'A human decision that gates effects' },
			{ name: 'Effect', value: 'effect', description: 'An external action sent once through the outbox' },
			{ name: 'Run', value: 'run', description: 'One execution of a workflow for one idempotency key' },
		],
		default: 'run',
	},
	run.operation,
	approval.operation,
	effect.operation,
	...run.fields,
	...approval.fields,
	...effect.fields,
];

/**
 * outputs: claim has "Do the work" and "Already handled"; the rest one
 * output. n8n's editor leaves parameters at their default out of the saved
 * workflow, hence the defaults here.
 */
const OUTPUTS = `={{ ($parameter.resource ?? 'run') === 'run' && ($parameter.operation ?? 'claim') === 'claim' ? [{ type: 'main', displayName: 'Do the work' }, { type: 'main', displayName: 'Already handled' }] : [{ type: 'main' }] }}`;

/** echo is what an item keeps of its request next to a scalar result. */
function echo(request: JsonObject): IDataObject {
	const out: IDataObject = {};
	if (typeof request.key === 'string') out.idempotency_key = request.key;
	if (typeof request.effect_id === 'string') out.effect_id = request.effect_id;
	return out;
}

export class Idemgate implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'idemgate',
		name: 'idemgate',
		icon: 'file:idemgate.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] + ": " + $parameter["resource"] }}',
		description: 'Exactly-once runs, human approvals and outbox effects with the idemgate PostgreSQL extension',
		defaults: { name: 'idemgate' },
		inputs: ['main'],
		outputs: OUTPUTS,
		credentials: [
			{
				// n8n's own Postgres credential: an existing one works.
				// eslint-disable-next-line n8n-nodes-base/node-class-description-credentials-name-unsuffixed
				name: 'postgres',
				required: true,
			},
		],
		properties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const resource = this.getNodeParameter('resource', 0) as string;
		const operation = this.getNodeParameter('operation', 0) as string;
		const credentials = await this.getCredentials('postgres');
		const claim = resource === 'run' && operation === 'claim';
		const doWork: INodeExecutionData[] = [];
		const handled: INodeExecutionData[] = [];

		for (let i = 0; i < items.length; i++) {
			try {
				const call = buildCall(resource, operation, (name) => this.getNodeParameter(name, i, null));
				const wakes = operationOf(resource, operation).wakes;
				const rows = await backend.query(credentials, call.sql, call.request);
				const row = rows[0] ?? {};
				if (call.notify && call.notify.length > 0 && wakes && wakes(row)) {
					await backend.notify(credentials, EFFECTS_CHANNEL, call.notify).catch(() => undefined);
				}
				const item: INodeExecutionData = { json: claim ? row : { ...echo(call.request), ...row }, pairedItem: { item: i } };
				if (claim && row.outcome === 'duplicate') handled.push(item);
				else doWork.push(item);
			} catch (e) {
				if (this.continueOnFail()) {
					// Never on "Do the work": an error item must not look claimed.
					(claim ? handled : doWork).push(errorItem(e, i, this.getNode().onError === 'continueErrorOutput'));
					continue;
				}
				throw nodeError(this.getNode(), e, i);
			}
		}
		return claim ? [doWork, handled] : [doWork];
	}
}
