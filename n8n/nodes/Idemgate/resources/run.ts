// nodes/Idemgate/resources/run.ts — the Run resource: claim (two outputs,
// nodes/Idemgate/Idemgate.node.ts), complete, fail and renew the lease of
// one run, each one call of idemgate's jsonb form (nodes/shared/requests.ts).
import { bool, compact, json, ownerChecked, required, text } from '../../shared/requests';
import type { Resource } from './common';
import { operationField, owned, show } from './common';

export const run: Resource = {
	operation: operationField(
		'run',
		[
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
		'claim',
	),

	fields: [
		// claim
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

		// complete, fail, renewLease
		...owned('run', 'complete', 'fail', 'renewLease'),
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
	],

	operations: {
		claim: {
			call: (get, opt) => ({
				sql: 'SELECT * FROM idemgate.claim($1::jsonb)',
				request: compact({
					key: required(get, 'key'),
					payload: json(get, 'payload') ?? null,
					workflow: text(get, 'workflowName'),
					lease: text(get, 'lease'),
					owner: text(opt, 'owner'),
					origin: text(get, 'origin'),
				}),
			}),
		},
		complete: {
			call: (get) => ({
				sql: 'SELECT idemgate.cas_transition($1::jsonb) AS version',
				request: compact({ ...ownerChecked(get), new_state: 'completed', result: json(get, 'result') }),
			}),
		},
		fail: {
			call: (get) => ({
				sql: 'SELECT idemgate.fail($1::jsonb) AS state',
				request: compact({
					...ownerChecked(get),
					error_class: required(get, 'errorClass'),
					error: text(get, 'error'),
					retryable: bool(get, 'retryable') ?? true,
				}),
			}),
		},
		renewLease: {
			call: (get) => ({
				sql: 'SELECT idemgate.renew_lease($1::jsonb) AS lease_expires_at',
				request: compact({ ...ownerChecked(get), extend_by: required(get, 'extendBy') }),
			}),
		},
	},
};
