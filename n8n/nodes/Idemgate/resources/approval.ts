// nodes/Idemgate/resources/approval.ts — the Approval resource: request a
// human decision on the effects of the claimed run, peek at it by its
// token, decide it; each one call of idemgate's jsonb form
// (nodes/shared/requests.ts). The token travels only as the bind parameter.
import { compact, json, list, ownerChecked, required, text } from '../../shared/requests';
import type { Resource } from './common';
import { effectsField, operationField, owned, show } from './common';

export const approval: Resource = {
	operation: operationField(
		'approval',
		[
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
		'request',
	),

	fields: [
		// request
		...owned('approval', 'request'),
		effectsField('approval', 'request'),
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

		// peek, decide
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
	],

	operations: {
		request: {
			call: (get, opt) => ({
				sql: 'SELECT * FROM idemgate.request_approval($1::jsonb)',
				request: compact({
					...ownerChecked(get),
					effects: json(get, 'effects'),
					expires_in: text(get, 'expiresIn'),
					card: json(get, 'card'),
					audience: list(get, 'audience'),
					requested_by: text(opt, 'requestedBy'),
				}),
			}),
		},
		peek: {
			call: (get) => ({
				sql: 'SELECT * FROM idemgate.peek_approval($1::jsonb)',
				request: compact({ token: required(get, 'token') }),
			}),
		},
		decide: {
			call: (get) => ({
				sql: 'SELECT * FROM idemgate.consume_approval($1::jsonb)',
				// The token last: PostgreSQL reports a JSON syntax error (a
				// \u0000 in the reason, say) with the text up to the error.
				request: compact({
					decision: required(get, 'decision'),
					approver: required(get, 'approver'),
					reason: text(get, 'reason'),
					token: required(get, 'token'),
				}),
				notify: [''],
			}),
			// Approved: the effects are in the outbox now.
			wakes: (row) => row.outcome === 'approved',
		},
	},
};
