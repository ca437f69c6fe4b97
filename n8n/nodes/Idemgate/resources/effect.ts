// nodes/Idemgate/resources/effect.ts — the Effect resource: enqueue the
// effects of the claimed run (the automatic path), and complete or fail an
// effect the idemgate Trigger claimed; each one call of idemgate's jsonb
// form (nodes/shared/requests.ts).
import { compact, effectTypes, int, json, ownerChecked, required, text } from '../../shared/requests';
import type { Resource } from './common';
import { effectsField, operationField, owned, show } from './common';

export const effect: Resource = {
	operation: operationField(
		'effect',
		[
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
		'enqueue',
	),

	fields: [
		// enqueue
		...owned('effect', 'enqueue'),
		effectsField('effect', 'enqueue'),

		// complete, fail
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
	],

	operations: {
		enqueue: {
			call: (get) => {
				const effects = json(get, 'effects');
				return {
					sql: 'SELECT * FROM idemgate.enqueue_effect($1::jsonb)',
					request: compact({ ...ownerChecked(get), effects }),
					notify: effectTypes(effects),
				};
			},
			// Not when ownership was lost (a row of NULLs).
			wakes: (row) => Array.isArray(row.effect_ids),
		},
		complete: {
			call: (get, opt) => ({
				sql: 'SELECT idemgate.complete_effect($1::jsonb) AS completed',
				request: compact({
					effect_id: required(get, 'effectId'),
					owner: required(get, 'owner'),
					provider_id: text(get, 'providerId'),
					status: int(opt, 'httpStatus'),
				}),
			}),
		},
		fail: {
			call: (get, opt) => ({
				sql: 'SELECT idemgate.fail_effect($1::jsonb) AS state',
				request: compact({
					effect_id: required(get, 'effectId'),
					owner: required(get, 'owner'),
					error_class: required(get, 'errorClass'),
					error: text(get, 'error'),
					retry_after: text(get, 'retryAfter'),
					status: int(opt, 'httpStatus'),
				}),
			}),
		},
	},
};
