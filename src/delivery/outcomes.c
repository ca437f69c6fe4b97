/*-------------------------------------------------------------------------
 *
 * src/delivery/outcomes.c
 *	  What a dispatcher records of each finished item (docs/dispatcher.md,
 *	  "Outcomes"): the error class of an answer or of its absence, the
 *	  state it leaves the effect in, endpoint health told, a status
 *	  look-up's answer; deliveries recorded together, the rest one by one,
 *	  and one by one in transactions of their own after a batch failed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>

#include <curl/curl.h>

#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/worker_signals.h"
#include "delivery/dispatch_items.h"
#include "delivery/outcomes.h"
#include "delivery/answer_body.h"
#include "delivery/worker_transactions.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "outbox/outbox_lookups.h"
#include "policy/endpoint_circuits.h"
#include "policy/secrets.h"

/* UuidText formats a uuid for messages. */
char *
UuidText(pg_uuid_t *u)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(u)));
}

/* ReleaseItem gives an unsent effect back to pending, after hold_secs (0: as due before). */
static void
ReleaseItem(Claimed *it, double hold_secs)
{
	GiveBackEffect(&it->effect_id, &it->batch->owner, hold_secs);
	pg_atomic_fetch_add_u64(&dispatch.shared->released, 1);
}

/*
 * FailureClass classes a request that got no complete response, from what
 * libcurl reported (the stage of the error, the bytes of the request
 * written: HttpRequest.request_sent), never from its message text. Before
 * the whole request was written the provider cannot have acted on it:
 * transport, retried. After it, the provider may have acted: a timeout is
 * timeout_after_send, anything else lost_after_send; both are unknown for
 * an endpoint that cannot dedupe (src/outbox/outbox.c).
 */
static const char *
FailureClass(const HttpRequest *r)
{
	if (r->destination_refused)
		return "rejected";		/* http.c refused to connect */
	switch (r->curl_code)
	{
		case CURLE_UNSUPPORTED_PROTOCOL:
		case CURLE_URL_MALFORMAT:
			return "rejected";
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
		case CURLE_COULDNT_CONNECT:
			return "transport";	/* no connection: nothing was written */
		case CURLE_SEND_FAIL_REWIND:

			/*
			 * A reused connection died and libcurl wanted to send the request
			 * again (RefuseRewind in http.c refused): whether the provider
			 * got it depends on how much of it was handed over.
			 */
			return r->body_sent >= r->body_len ? "lost_after_send" : "transport";
		default:
			break;
	}
	if (!r->request_sent)
		return "transport";
	if (r->curl_code == CURLE_OPERATION_TIMEDOUT)
		return "timeout_after_send";
	return "lost_after_send";
}

/*
 * RecordLookup records a status look-up's answer (src/outbox/outbox_lookups.c):
 * 2xx delivered, 404 never received, anything else (no answer too) still
 * unknown. One not sent (kill switch, pause, a missing secret, a URL no
 * longer allowed) leaves the effect unknown, due as before. Endpoint
 * health does not count look-ups.
 */
static void
RecordLookup(Claimed *it)
{
	HttpRequest *r = &it->req;
	int			status = r->curl_code == CURLE_OK ? (int) r->status : 0;
	char	   *pid = NULL;
	LookupResult result;

	if (it->fate != FATE_SENT)
	{
		GiveBackLookup(&it->effect_id, &it->batch->owner);
		return;
	}
	if (status >= 200 && status < 300)
		pid = ProviderIdFrom(r->resp_body, r->resp_len, it->provider_id_field);
	result = RecordLookupAnswer(&it->effect_id, &it->batch->owner, status, pid);
	if (result == LOOKUP_DELIVERED)
		pg_atomic_fetch_add_u64(&dispatch.shared->completed, 1);
}

/*
 * RecordOutcome records one finished effect exactly as complete_effect /
 * fail_effect would. Classification:
 *   2xx                             completed (provider id from the body)
 *   429                             rate_limited (Retry-After)
 *   502, 503, 504                   unavailable (Retry-After)
 *   500 and other 5xx               server_error (may have happened)
 *   3xx                             rejected (redirects are never followed)
 * A failure with an HTTP status keeps the first 1 KB of the body after it
 * in last_error ("HTTP 400: {...}", see ErrorBodyExcerpt).
 *   other 4xx (and 1xx)             rejected
 *   non-public address, not listed  rejected (http.c refused to connect)
 *   any failure before the whole request was written  transport
 *   a timeout after the whole request was written     timeout_after_send
 *   any other failure after that (reset, close before
 *   a complete response, TLS or read error, malformed
 *   response)                                         lost_after_send
 * (FailureClass; docs/dispatcher.md, "Classification").
 * libcurl never re-sends a request by itself (see RefuseRewind in http.c).
 */
static void
RecordOutcome(Claimed *it)
{
	HttpRequest *r = &it->req;
	pg_uuid_t  *owner = &it->batch->owner;
	const char *cls = NULL;
	char		msg[320];
	char	   *excerpt = NULL;	/* start of the provider's error body */
	const char *state;
	int			status = (int) r->status;
	int			flags = 0;

	if (it->lookup)
	{
		RecordLookup(it);
		return;
	}
	if (it->fate == FATE_RELEASE || it->fate == FATE_HOLD)
	{
		ReleaseItem(it, it->fate == FATE_HOLD ? IDEMGATE_SECRET_HOLD_SECS : 0);
		return;
	}
	if (it->fate == FATE_DENIED)
	{
		state = FailEffect(&it->effect_id, owner, "rejected", it->denied_why, -1, 0);
		pg_atomic_fetch_add_u64(&dispatch.shared->failed, 1);
		return;
	}

	if (r->curl_code == CURLE_OK)
	{
		if (status >= 200 && status < 300)
		{
			char	   *pid = ProviderIdFrom(r->resp_body, r->resp_len, it->provider_id_field);

			if (CompleteEffect(&it->effect_id, owner, pid, status))
				pg_atomic_fetch_add_u64(&dispatch.shared->completed, 1);
			CircuitNoteAnswer(it->req.effect_type, it->probe, owner);
			return;
		}
		if (status == 429)
			cls = "rate_limited";
		else if (status == 502 || status == 503 || status == 504)
			cls = "unavailable";
		else if (status >= 500)
			cls = "server_error";
		else
			cls = "rejected";
		if (status >= 300 && status < 400)
			snprintf(msg, sizeof(msg), "HTTP %d (redirects are not followed)", status);
		else
			snprintf(msg, sizeof(msg), "HTTP %d", status);
		excerpt = ErrorBodyExcerpt(r->resp_body, r->resp_len);
	}
	else
	{
		cls = FailureClass(r);
		if (r->curl_code == CURLE_SEND_FAIL_REWIND)
			snprintf(msg, sizeof(msg),
					 "connection %s without a response after the request was sent",
					 r->os_errno == ECONNRESET ? "reset" : "closed");
		else
			snprintf(msg, sizeof(msg), "%s%s", r->error,
					 r->request_sent ? " (after the request was sent)" : "");
	}

	/*
	 * Endpoint health (src/policy/endpoint_circuits.c): down, or it answered. Not
	 * the requests a shutdown aborted: they say nothing of the endpoint.
	 */
	if (!CircuitCountsFailure(cls))
		CircuitNoteAnswer(it->req.effect_type, it->probe, owner);
	else if (!got_sigterm &&
			 CircuitNoteFailure(it->req.effect_type, cls, status, it->probe, owner))
		flags = FAIL_HOLD_LAST;
	state = FailEffectWith(&it->effect_id, owner, cls,
						   excerpt ? psprintf("%s: %s", msg, excerpt) : msg,
						   (strcmp(cls, "rate_limited") == 0 || strcmp(cls, "unavailable") == 0)
						   ? r->retry_after_usecs : -1,
						   status, flags);
	if (state != NULL)
		pg_atomic_fetch_add_u64(&dispatch.shared->failed, 1);
}

/* ItemRecorded frees an item once its outcome is in the database. */
static void
ItemRecorded(Claimed *it)
{
	ClaimBatch *b = it->batch;

	HttpRequestFree(&it->req);
	if (--b->remaining == 0)
		MemoryContextDelete(b->cxt);
}

/* QueueForRecording adds a finished item to the list to record. */
void
QueueForRecording(Claimed *it)
{
	if (dispatch.n_to_record == 0)
		dispatch.oldest_to_record_at = GetCurrentTimestamp();
	it->next = dispatch.to_record;
	dispatch.to_record = it;
	dispatch.n_to_record++;
}

/* IsDelivered tells whether a finished item was answered 2xx. */
static bool
IsDelivered(Claimed *it)
{
	return !it->lookup && it->fate == FATE_SENT && it->req.curl_code == CURLE_OK &&
		it->req.status >= 200 && it->req.status < 300;
}

/*
 * RecordQueued records every queued outcome in the current transaction.
 * The deliveries (2xx) are recorded together by CompleteEffects: three
 * statements for the whole batch rather than five or six per effect. The
 * rest (failures, releases) one by one.
 */
void
RecordQueued(void)
{
	int			n = 0;
	int			i = 0;
	pg_uuid_t  *ids;
	pg_uuid_t  *owners;
	char	  **pids;
	int		   *statuses;
	bool	   *completed;

	for (Claimed *it = dispatch.to_record; it != NULL; it = it->next)
	{
		if (IsDelivered(it))
			n++;
		else
			RecordOutcome(it);
	}
	if (n == 0)
		return;
	ids = palloc(sizeof(pg_uuid_t) * n);
	owners = palloc(sizeof(pg_uuid_t) * n);
	pids = palloc(sizeof(char *) * n);
	statuses = palloc(sizeof(int) * n);
	completed = palloc(sizeof(bool) * n);
	for (Claimed *it = dispatch.to_record; it != NULL; it = it->next)
	{
		if (!IsDelivered(it))
			continue;
		ids[i] = it->effect_id;
		owners[i] = it->batch->owner;
		pids[i] = ProviderIdFrom(it->req.resp_body, it->req.resp_len, it->provider_id_field);
		statuses[i] = (int) it->req.status;
		i++;
		CircuitNoteAnswer(it->req.effect_type, it->probe, &it->batch->owner);
	}
	pg_atomic_fetch_add_u64(&dispatch.shared->completed,
							CompleteEffects(n, ids, owners, pids, statuses, completed));
}

/* FinishQueued frees the queued items after their transaction committed. */
void
FinishQueued(void)
{
	Claimed	   *it = dispatch.to_record;

	while (it != NULL)
	{
		Claimed	   *next = it->next;

		ItemRecorded(it);
		it = next;
	}
	dispatch.to_record = NULL;
	dispatch.n_to_record = 0;
}

/* RecordOutcomeWork records one outcome (a RunInTransaction work). */
static void
RecordOutcomeWork(void *arg)
{
	RecordOutcome((Claimed *) arg);
}

/* RecordOneOutcome records one outcome in its own transaction; false on error. */
static bool
RecordOneOutcome(Claimed *it, MemoryContext loop_cxt)
{
	return RunInTransaction(RecordOutcomeWork, it, loop_cxt);
}

/*
 * RecordAlone records each queued outcome in its own transaction, after a
 * batch transaction failed. An outcome that fails twice is dropped: its
 * lease will expire and settle it.
 */
void
RecordAlone(MemoryContext loop_cxt)
{
	Claimed    *list = dispatch.to_record;

	dispatch.to_record = NULL;
	dispatch.n_to_record = 0;
	while (list != NULL)
	{
		Claimed    *it = list;
		bool		ok;

		list = it->next;
		StopIfPostmasterDied();
		ok = RecordOneOutcome(it, loop_cxt);
		if (ok || ++it->record_failures >= 2)
		{
			if (!ok)
				ereport(WARNING,
						(errmsg("idemgate dispatcher: could not record the outcome of effect "
								"%s; its lease will settle it",
								UuidText(&it->effect_id))));
			ItemRecorded(it);
		}
		else
			QueueForRecording(it);
	}
}
