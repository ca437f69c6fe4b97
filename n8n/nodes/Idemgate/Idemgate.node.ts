// nodes/Idemgate/Idemgate.node.ts — the idemgate node: runs (claim,
// complete, fail, renew lease), approvals (request, peek, decide) and
// effects (enqueue, complete, fail), each one call of idemgate's jsonb form
// with one bind parameter (nodes/shared/requests.ts). Claim has two outputs:
// "Do the work" (claimed, recovered) and "Already handled" (duplicate).
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
import { buildCall, EFFECTS_CHANNEL } from '../shared/requests';
import type { JsonObject } from '../shared/requests';

const show = (resource: string, ...operation: string[]) => ({ show: { resource: [resource], operation } });
const owned = (resource: string, ...operation: string[]): INodeProperties[] => [
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
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['run'] } },
		options: [
			{
				name: 'Claim',
				value: 'claim',
				description: 'Claim the run of a key: do the work once, answer duplicates with the stored result',
				action: 'Claim a run',
			},
			{
				name: 'Complete',
				value: 'complete',
				description: 'Mark the claimed run completed with its result',
				action: 'Complete a run',
			},
			{
				name: 'Fail',
				value: 'fail',
				description: 'Record a failure of the claimed run (retryable or terminal)',
				action: 'Fail a run',
			},
			{
				name: 'Renew Lease',
				value: 'renewLease',
				description: 'Extend the lease of the claimed run while long work goes on',
				action: 'Renew the lease of a run',
			},
		],
		default: 'claim',
	},
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['approval'] } },
		options: [
			{
				name: 'Decide',
				value: 'decide',
				description: 'Approve or reject with the token from the approval link (once)',
				action: 'Decide an approval',
			},
			{
				name: 'Peek',
				value: 'peek',
				description: 'Read an approval by its token without changing anything',
				action: 'Peek at an approval',
			},
			{
				name: 'Request',
				value: 'request',
				description: 'Ask a human to approve the effects of the claimed run',
				action: 'Request an approval',
			},
		],
		default: 'request',
	},
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['effect'] } },
		options: [
			{
				name: 'Complete',
				value: 'complete',
				description: 'Record that an effect claimed by the trigger was delivered',
				action: 'Complete an effect',
			},
			{
				name: 'Enqueue',
				value: 'enqueue',
				description: 'Queue the effects of the claimed run without a human (automatic path)',
				action: 'Enqueue effects',
			},
			{
				name: 'Fail',
				value: 'fail',
				description: 'Record a failed delivery of an effect claimed by the trigger',
				action: 'Fail an effect',
			},
		],
		default: 'enqueue',
	},

	// run: claim
	{
		displayName: 'Idempotency Key',
		name: 'key',
		type: 'string',
		required: true,
		default: '',
		placeholder: '={{ $json.body.event_id }}',
		description:
			"The event's own key (the sender's event or message ID), never a value the workflow makes up: a redelivery must bring the same key",
		displayOptions: show('run', 'claim'),
	},
	{
		displayName: 'Payload',
		name: 'payload',
		type: 'json',
		required: true,
		default: '={{ $json }}',
		description:
			'The input the run is for; the same key with a different payload is an error (IG001). Behind a webhook use the body only: headers differ between deliveries.',
		displayOptions: show('run', 'claim'),
	},
	{
		displayName: 'Workflow Name',
		name: 'workflowName',
		type: 'string',
		default: '={{ $workflow.name }}',
		description: 'Recorded with the run; alerts and metrics name it',
		displayOptions: show('run', 'claim'),
	},
	{
		displayName: 'Lease',
		name: 'lease',
		type: 'string',
		default: '5 minutes',
		description: 'How long this execution owns the run before another delivery may take it over (an interval)',
		displayOptions: show('run', 'claim'),
	},
	{
		displayName: 'Origin',
		name: 'origin',
		type: 'string',
		default: '',
		placeholder: 'webhook:shop',
		description:
			'Where this delivery came from (webhook:shop, schedule:nightly, error-trigger, manual:rerun); kept on the run and in its duplicate and takeover events. Empty: none.',
		displayOptions: show('run', 'claim'),
	},

	// run: complete, fail, renewLease; approval: request; effect: enqueue
	...owned('run', 'complete', 'fail', 'renewLease'),
	...owned('approval', 'request'),
	...owned('effect', 'enqueue'),
	{
		displayName: 'Result',
		name: 'result',
		type: 'json',
		default: '{}',
		description: 'Stored with the run and returned to later duplicates',
		displayOptions: show('run', 'complete'),
	},
	{
		displayName: 'Error Class',
		name: 'errorClass',
		type: 'string',
		required: true,
		default: 'n8n_error',
		description: 'A short class for metrics and alerts, e.g. n8n_error, invalid_output, model_timeout',
		displayOptions: show('run', 'fail'),
	},
	{
		displayName: 'Error',
		name: 'error',
		type: 'string',
		default: '',
		description: 'What went wrong (kept in the run and its dead letter)',
		displayOptions: show('run', 'fail'),
	},
	{
		displayName: 'Retryable',
		name: 'retryable',
		type: 'boolean',
		default: true,
		description:
			'Whether a redelivery of the event may recover the run (up to idemgate.max_run_attempts failures); off: failed_terminal and a dead letter now',
		displayOptions: show('run', 'fail'),
	},
	{
		displayName: 'Extend By',
		name: 'extendBy',
		type: 'string',
		required: true,
		default: '5 minutes',
		description: 'New lease length from now (an interval); never beyond idemgate.max_lease_life in total',
		displayOptions: show('run', 'renewLease'),
	},

	// approval: request; effect: enqueue
	{
		displayName: 'Effects',
		name: 'effects',
		type: 'json',
		required: true,
		default: '{\n  "type": "",\n  "target": "",\n  "payload": {}\n}',
		description:
			'One effect or an array of them: {"type", "target", "payload"} (optional "not_before"). Approval: queued only if approved.',
		displayOptions: { show: { resource: ['approval', 'effect'], operation: ['request', 'enqueue'] } },
	},
	{
		displayName: 'Card',
		name: 'card',
		type: 'json',
		default: '{}',
		description: 'What the approver sees: title, source link, model output, model and workflow version',
		displayOptions: show('approval', 'request'),
	},
	{
		displayName: 'Audience',
		name: 'audience',
		type: 'string',
		default: '',
		placeholder: 'ana@example.com, joan@example.com',
		description: 'Who may decide (comma-separated identities); empty: any approver',
		displayOptions: show('approval', 'request'),
	},
	{
		displayName: 'Expires In',
		name: 'expiresIn',
		type: 'string',
		default: '24 hours',
		description: 'How long the approval stays open (an interval); expired undecided, the run fails',
		displayOptions: show('approval', 'request'),
	},

	// approval: peek, decide
	{
		displayName: 'Token',
		name: 'token',
		type: 'string',
		typeOptions: { password: true },
		required: true,
		default: '',
		placeholder: '={{ $json.query.token }}',
		description: 'The token from the approval link; sent as a bind parameter, never in statement text',
		displayOptions: show('approval', 'peek', 'decide'),
	},
	{
		displayName: 'Decision',
		name: 'decision',
		type: 'options',
		options: [
			{ name: 'Approve', value: 'approve' },
			{ name: 'Reject', value: 'reject' },
		],
		default: 'approve',
		description: 'The decision; use an expression to take it from the form',
		displayOptions: show('approval', 'decide'),
	},
	{
		displayName: 'Approver',
		name: 'approver',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $json.headers['x-auth-request-email'] }}",
		description:
			'Who decides, as your SSO proxy authenticated them (never a form field); must not be who requested it',
		displayOptions: show('approval', 'decide'),
	},
	{
		displayName: 'Reason',
		name: 'reason',
		type: 'string',
		default: '',
		description: "The approver's reason, recorded in the audit events",
		displayOptions: show('approval', 'decide'),
	},

	// effect: complete, fail
	{
		displayName: 'Effect ID',
		name: 'effectId',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $('idemgate Trigger').item.json.effect_id }}",
		description: 'The effect_id the trigger emitted',
		displayOptions: show('effect', 'complete', 'fail'),
	},
	{
		displayName: 'Lease Owner',
		name: 'owner',
		type: 'string',
		required: true,
		default: '',
		placeholder: "={{ $('idemgate Trigger').item.json.lease_owner }}",
		description: 'The lease_owner the trigger emitted with the effect',
		displayOptions: show('effect', 'complete', 'fail'),
	},
	{
		displayName: 'Provider ID',
		name: 'providerId',
		type: 'string',
		default: '',
		description: "The provider's ID of what was sent (message ID, charge ID), kept for audits",
		displayOptions: show('effect', 'complete'),
	},
	{
		displayName: 'Error Class',
		name: 'errorClass',
		type: 'options',
		options: [
			{
				name: 'Rate Limited (429)',
				value: 'rate_limited',
				description: 'Retried with backoff, honouring Retry After',
			},
			{
				name: 'Rejected (Other 4xx)',
				value: 'rejected',
				description: 'Not retried: failed and a dead letter',
			},
			{
				name: 'Server Error (500)',
				value: 'server_error',
				description: 'May have happened: unknown, not re-sent blindly',
			},
			{
				name: 'Timeout After Send',
				value: 'timeout_after_send',
				description: 'May have happened: unknown, not re-sent blindly',
			},
			{
				name: 'Transport (Never Reached the Provider)',
				value: 'transport',
				description: 'Retried with backoff',
			},
			{
				name: 'Unavailable (502/503/504)',
				value: 'unavailable',
				description: 'Retried with backoff',
			},
		],
		default: 'transport',
		description: 'What kind of failure; it decides between retry, unknown and dead letter',
		displayOptions: show('effect', 'fail'),
	},
	{
		displayName: 'Error',
		name: 'error',
		type: 'string',
		default: '',
		description: "What went wrong (status and the provider's answer)",
		displayOptions: show('effect', 'fail'),
	},
	{
		displayName: 'Retry After',
		name: 'retryAfter',
		type: 'string',
		default: '',
		placeholder: "={{ $json.headers['retry-after'] }}",
		description: "The provider's Retry-After (seconds or an interval); wins when longer than the backoff",
		displayOptions: show('effect', 'fail'),
	},

	// options
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('run', 'claim'),
		options: [
			{
				displayName: 'Lease Owner',
				name: 'owner',
				type: 'string',
				default: '',
				description: 'A UUID to own the run with; empty: a fresh random one',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('approval', 'request'),
		options: [
			{
				displayName: 'Requested By',
				name: 'requestedBy',
				type: 'string',
				default: '',
				description: 'Who asks; that identity may not approve it (separation of duties)',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		displayOptions: show('effect', 'complete', 'fail'),
		options: [
			{
				displayName: 'HTTP Status',
				name: 'httpStatus',
				type: 'number',
				default: 0,
				description: "The provider's HTTP status, kept with the effect",
			},
		],
	},
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

/** shouldNotify tells whether a call queued effects (the trigger is woken). */
function shouldNotify(resource: string, operation: string, row: JsonObject): boolean {
	if (resource === 'approval' && operation === 'decide') return row.outcome === 'approved';
	if (resource === 'effect' && operation === 'enqueue') return Array.isArray(row.effect_ids);
	return false;
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
				const rows = await backend.query(credentials, call.sql, call.request);
				const row = rows[0] ?? {};
				if (call.notify && call.notify.length > 0 && shouldNotify(resource, operation, row)) {
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
