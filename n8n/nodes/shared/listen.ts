// nodes/shared/listen.ts — one LISTEN connection that reconnects.
//
// A trigger keeps a dedicated connection (LISTEN needs a session: a direct
// connection or a session-pooled one, never a transaction pool). When it
// drops (server restart, network), it is opened again after a pause, and
// onConnect runs again so the trigger can catch up on what it missed.
import type { Client, Notification } from 'pg';
import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import { backend } from './connection';

export interface Listener {
	close(): Promise<void>;
}

export interface ListenOptions {
	channel: string;
	onNotify: (payload: string) => void;
	onConnect?: () => void;
	onError?: (e: Error) => void;
	/** Pause before reconnecting, in ms. */
	retryMs?: number;
}

/** quoteIdent quotes a channel name for LISTEN (which takes no parameter). */
export function quoteIdent(name: string): string {
	return '"' + name.replace(/"/g, '""') + '"';
}

/**
 * listen opens the connection and LISTENs (failing if the first attempt
 * fails, so a wrong credential is an activation error), then keeps it open.
 */
export async function listen(c: ICredentialDataDecryptedObject, o: ListenOptions): Promise<Listener> {
	let client: Client | null = null;
	let closed = false;
	let timer: NodeJS.Timeout | null = null;
	const retryMs = o.retryMs ?? 5000;

	const open = async () => {
		const cl = await backend.connect(c);
		cl.on('notification', (n: Notification) => {
			if (n.channel === o.channel) o.onNotify(n.payload ?? '');
		});
		const lost = (e?: Error) => {
			if (client !== cl) return;
			client = null;
			cl.removeAllListeners('error');
			cl.on('error', () => undefined);
			cl.end().catch(() => undefined);
			if (e && o.onError) o.onError(e);
			schedule();
		};
		cl.on('error', (e: Error) => lost(e));
		cl.on('end', () => lost());
		await cl.query(`LISTEN ${quoteIdent(o.channel)}`);
		if (closed) {
			await cl.end().catch(() => undefined);
			return;
		}
		client = cl;
		if (o.onConnect) o.onConnect();
	};
	const schedule = () => {
		if (closed || timer) return;
		timer = setTimeout(() => {
			timer = null;
			open().catch((e: Error) => {
				if (o.onError) o.onError(e);
				schedule();
			});
		}, retryMs);
	};

	await open();
	return {
		async close() {
			closed = true;
			if (timer) clearTimeout(timer);
			const cl = client;
			client = null;
			if (cl) {
				cl.removeAllListeners('error');
				cl.on('error', () => undefined);
				await cl.end().catch(() => undefined);
			}
		},
	};
}
