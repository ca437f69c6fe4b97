// nodes/IdemgateTrigger/IdemgateTrigger.node.ts — the idemgate trigger.
//
// event "effect": pulls due effects of one type (claim_effects, the pull
// API) and starts one execution per batch, one item per effect, for the
// workflow to send and then settle with the idemgate node (effect:
// complete or fail). It is woken by NOTIFY on the effects channel (the
// idemgate node notifies it after an enqueue or an approval) and polls as
// a fallback: effects retried after a backoff, or queued by other clients,
// are found by the poll. At most "executions in flight" batches are out
// at once: the next batch is claimed when an execution finishes, so
// leases are not spent waiting in n8n's queue.
//
// event "alert": LISTEN idemgate_alerts and emit each notification.
import { createDeferredPromise, NodeOperationError } from 'n8n-workflow';
import type {
	ICredentialDataDecryptedObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IRun,
	ITriggerFunctions,
	ITriggerResponse,
} from 'n8n-workflow';
import { backend } from '../shared/connection';
import { describe, description as describeFailure, isSqlState } from '../shared/errors';
import { listen } from '../shared/listen';
import { ALERTS_CHANNEL, claimEffectsCall, EFFECTS_CHANNEL } from '../shared/requests';
import type { Json } from '../shared/requests';

/** intervalMs reads a simple interval ("2 minutes", "90 seconds", "90") in ms. */
export function intervalMs(interval: string, fallbackMs: number): number {
	const m = /^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hour|hours)?\s*$/i.exec(interval || '');
	if (!m) return fallbackMs;
	const n = Number(m[1]);
	const unit = (m[2] || 's').toLowerCase();
	const mult = unit.startsWith('h') ? 3600000 : unit.startsWith('m') ? 60000 : 1000;
	return n * mult;
}

/** alertItem turns an idemgate_alerts payload into an item (JSON, else the text). */
export function alertItem(payload: string): INodeExecutionData {
	try {
		const v = JSON.parse(payload) as Json;
		if (v && typeof v === 'object' && !Array.isArray(v)) return { json: v };
		return { json: { payload: v } };
	} catch {
		return { json: { payload } };
	}
}

export class IdemgateTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'idemgate Trigger',
		name: 'idemgateTrigger',
		icon: 'file:idemgate.svg',
		group: ['trigger'],
		version: 1,
		subtitle: '={{ $parameter["event"] === "alert" ? "alerts" : "effects: " + $parameter["effectType"] }}',
		description: 'Starts a workflow for due idemgate effects of one type (pull API), or for each idemgate alert',
		defaults: { name: 'idemgate Trigger' },
		inputs: [],
		outputs: ['main'],
		credentials: [
			{
				// n8n's own Postgres credential: an existing one works.
				// eslint-disable-next-line n8n-nodes-base/node-class-description-credentials-name-unsuffixed
				name: 'postgres',
				required: true,
			},
		],
		properties: [
			{
				displayName: 'Event',
				name: 'event',
				type: 'options',
				noDataExpression: true,
				options: [
					{
						name: 'Alert',
						value: 'alert',
						description: 'Each alert that starts or stops firing (LISTEN idemgate_alerts)',
					},
					{
						name: 'Effect',
						value: 'effect',
						description: 'Due effects of one type, claimed for this workflow to send',
					},
				],
				default: 'effect',
			},
			{
				displayName: 'Effect Type',
				name: 'effectType',
				type: 'string',
				required: true,
				default: '',
				placeholder: 'n8n_http',
				description:
					'The type to pull; the credential\'s role needs it granted (idemgate.grant_effect_type), and it must have no registered endpoint',
				displayOptions: { show: { event: ['effect'] } },
			},
			{
				displayName: 'Batch',
				name: 'batch',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 1000 },
				default: 10,
				description: 'Most effects per execution',
				displayOptions: { show: { event: ['effect'] } },
			},
			{
				displayName: 'Lease',
				name: 'lease',
				type: 'string',
				default: '1 minute',
				description:
					'How long the workflow has to send and settle each effect; an unsettled effect then counts as possibly sent (unknown)',
				displayOptions: { show: { event: ['effect'] } },
			},
			{
				displayName: 'Poll Interval (Seconds)',
				name: 'pollInterval',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 30,
				description:
					'Also look for due effects this often: retries after a backoff and effects queued without a notification',
				displayOptions: { show: { event: ['effect'] } },
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				displayOptions: { show: { event: ['effect'] } },
				options: [
					{
						displayName: 'Channel',
						name: 'channel',
						type: 'string',
						default: EFFECTS_CHANNEL,
						description: 'The channel to LISTEN on for new effects',
					},
					{
						displayName: 'Executions in Flight',
						name: 'inFlight',
						type: 'number',
						typeOptions: { minValue: 1, maxValue: 100 },
						default: 1,
						description: 'Most batches being worked on at once',
					},
				],
			},
		],
	};

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const credentials = await this.getCredentials('postgres');
		const event = this.getNodeParameter('event', 'effect') as string;
		if (event === 'alert') {
			const listener = await listen(credentials, {
				channel: ALERTS_CHANNEL,
				onNotify: (payload) => this.emit([[alertItem(payload)]]),
				onError: (e) => this.logger.warn(`idemgate Trigger: LISTEN ${ALERTS_CHANNEL} lost: ${e.message}; reconnecting`),
			});
			return { closeFunction: async () => listener.close() };
		}
		return effectTrigger.call(this, credentials);
	}
}

/** effectTrigger runs the "effect" event (see the file's comment). */
async function effectTrigger(this: ITriggerFunctions, credentials: ICredentialDataDecryptedObject): Promise<ITriggerResponse> {
	const effectType = this.getNodeParameter('effectType', '') as string;
	const batch = Number(this.getNodeParameter('batch', 10)) || 10;
	const lease = this.getNodeParameter('lease', '1 minute') as string;
	const pollMs = Math.max(1, Number(this.getNodeParameter('pollInterval', 30)) || 30) * 1000;
	const opts = this.getNodeParameter('options', {}) as { channel?: string; inFlight?: number };
	const channel = opts.channel || EFFECTS_CHANNEL;
	const maxInFlight = Math.max(1, Number(opts.inFlight) || 1);
	let call;
	try {
		call = claimEffectsCall(effectType, batch, lease);
	} catch (e) {
		throw new NodeOperationError(this.getNode(), (e as Error).message);
	}
	// An execution that never reports back frees its slot after the lease.
	const waitMs = intervalMs(lease, 60000) + 5000;
	const manual = this.getMode() === 'manual';

	let closed = false;
	let claiming = false;
	let again = false;
	let inFlight = 0;
	let lastError = '';

	const claim = async (): Promise<INodeExecutionData[]> => {
		const rows = await backend.query(credentials, call.sql, call.request);
		return rows.map((json) => ({ json }));
	};
	const finished = (done: Promise<IRun>) =>
		new Promise<void>((resolve) => {
			const t = setTimeout(resolve, waitMs);
			done.then(
				() => {
					clearTimeout(t);
					resolve();
				},
				() => {
					clearTimeout(t);
					resolve();
				},
			);
		});
	const pump = async (): Promise<void> => {
		if (closed) return;
		if (claiming) {
			again = true;
			return;
		}
		claiming = true;
		try {
			while (!closed && inFlight < maxInFlight) {
				again = false;
				const items = await claim();
				lastError = '';
				if (closed || items.length === 0) break;
				inFlight++;
				const done = createDeferredPromise<IRun>();
				this.emit([items], undefined, done);
				void finished(done.promise).then(() => {
					inFlight--;
					void pump();
				});
				if (items.length < batch && !again) break;
			}
		} catch (e) {
			const f = describe(e);
			const text = describeFailure(f);
			if (text !== lastError) {
				lastError = text;
				this.logger.error(`idemgate Trigger: claim_effects(${effectType}) failed: ${text}`);
			}
			if (manual && isSqlState(f.code)) {
				closed = true;
				this.emitError(new NodeOperationError(this.getNode(), f.message, { description: text }));
			}
		} finally {
			claiming = false;
		}
		if (again && !closed && inFlight < maxInFlight) void pump();
	};

	const listener = await listen(credentials, {
		channel,
		onNotify: (payload) => {
			if (payload === '' || payload === effectType) void pump();
		},
		onConnect: () => void pump(),
		onError: (e) => this.logger.warn(`idemgate Trigger: LISTEN ${channel} lost: ${e.message}; reconnecting`),
	});
	const poll = setInterval(() => void pump(), pollMs);

	return {
		closeFunction: async () => {
			closed = true;
			clearInterval(poll);
			await listener.close();
		},
	};
}
