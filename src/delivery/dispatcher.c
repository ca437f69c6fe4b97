/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher.c
 *	  The dispatcher background worker: claim due effects,
 *	  POST them to their registered endpoints, record each outcome.
 *
 * Design note.
 *
 * Processes. The launcher (src/delivery/launcher.c) starts idemgate.dispatchers
 * dynamic workers in idemgate.database and restarts any that exit. The
 * provider id is read from a response by src/delivery/response.c, and
 * dispatcher_status() reads the shared slots (src/operations/dispatcher_status.c).
 * A dispatcher whose database has no idemgate extension yet stays idle.
 *
 * States of an effect as the dispatcher sees them:
 *
 *   pending --claim (commit!)--> sending --POST--> completed
 *                                   |          \-> pending (retry, backoff)
 *                                   |          \-> unknown / failed
 *                                   \--kill switch off before the POST--> pending
 *                                   \--crash: lease expires--> unknown (or
 *                                      pending when the endpoint honours the key)
 *
 * The claim (FOR UPDATE OF outbox SKIP LOCKED; state sending, attempts + 1,
 * a lease owned by a fresh uuid per claim, expiring after the endpoint
 * timeout plus a margin) is COMMITTED before any byte is sent. So a crash
 * at any point leaves the effect either pending and never sent, or
 * sending; SettleExpiredLeases (run in a round at most once a second, by any
 * dispatcher) turns an expired sending lease into unknown, never silently
 * into a second send. Lease owners name their dispatcher and server life,
 * so a starting dispatcher settles at once the leases of dispatchers that
 * are gone (src/delivery/dispatcher_leases.c) instead of waiting for them to expire. Outcomes are recorded with CompleteEffect/FailEffect
 * (src/outbox/outbox.c), the same code as the pull API, under the lease owner
 * check, so a late outcome for a lease that was settled meanwhile is
 * ignored.
 *
 * Kill switch: ActionsEnabled() is checked in the claiming transaction and
 * again in a short transaction immediately before the claimed requests are
 * handed to libcurl; when it is off by then, the claimed effects go back to
 * pending with the attempt uncounted (held, not lost). The last word is the
 * send barrier's (src/delivery/send_barrier.c), checked by libcurl right before a
 * request's first byte: a switch-off or pause that has committed stops
 * every request not yet written, which also goes back to pending.
 *
 * Throughput. Requests are sent concurrently through one libcurl multi
 * handle (src/delivery/http.c) kept for the life of the process, so keep-alive
 * connections are reused across rounds; at most idemgate.max_in_flight are
 * in flight. Finished requests are recorded in batches, in the same
 * transaction as the next claim, so a busy dispatcher commits once per
 * batch rather than once per effect. If that transaction fails, each
 * outcome is retried alone in its own transaction (one bad row cannot
 * hold up the others); an outcome that still cannot be recorded is left
 * to lease expiry.
 *
 * Endpoint limits. An effect whose endpoint has a rate_limit or
 * max_in_flight waits in a local queue until src/policy/rate_limit.c (shared by
 * all dispatchers) lets it start; waiting effects count against the
 * capacity, so no more is claimed than can go out.
 *
 * Waking. WakeDispatcherAtCommit (src/core/dispatcher_wake.c) sets our latch when a
 * transaction that enqueued effects commits; polling every
 * idemgate.poll_interval is only the fallback (for retries whose backoff
 * has elapsed). A claim that filled its batch loops again at once.
 *
 * Postmaster death is checked on every loop path (idle wait, before and
 * after each claim/record transaction and each libcurl poll), so a
 * dispatcher stops sending within milliseconds of the postmaster's death
 * and never keeps the old shared memory attached. Statistics are reported
 * (pgstat_report_stat) after every transaction, so autovacuum sees the
 * outbox churn while the dispatcher runs.
 *
 * Housekeeping (first dispatcher only, each call in its own transaction,
 * errors logged and the loop goes on): idemgate.expire_approvals(),
 * idemgate.complete_settled_runs(n) (the safety net of run completion:
 * the next n approved runs are checked for effects all settled, see
 * docs/outbox.md) and idemgate.publish_alerts() every second,
 * idemgate.purge() hourly when idemgate.retention > 0; each only when the
 * function exists.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "common/jsonapi.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "core/crypto.h"
#include "delivery/dispatcher.h"
#include "delivery/dispatcher_leases.h"
#include "citus/distributed.h"
#include "core/dispatcher_shmem.h"
#include "core/dispatcher_wake.h"
#include "policy/endpoint_circuits.h"
#include "policy/endpoints.h"
#include "core/guc.h"
#include "delivery/http.h"
#include "policy/killswitch.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "outbox/outbox_lookups.h"
#include "core/pg_compat.h"
#include "policy/rate_limit.h"
#include "delivery/response.h"
#include "policy/secrets.h"
#include "delivery/send_barrier.h"
#include "policy/status_url.h"
#include "citus/spi_util.h"
#include "core/worker_signals.h"

/* Lease = endpoint timeout + this, to cover recording the outcome. */
#define LEASE_MARGIN_SECS	10
/* Longest sleep while effects wait for their endpoint's rate limit. */
#define WAITING_POLL_MS		5
/* Longest wait in curl_multi_poll while requests are in flight. */
#define MULTI_POLL_MS		10
/* Longest an outcome waits to be batched with others before recording. */
#define RECORD_DELAY_MS		20
/* On SIGTERM, how long requests in flight may still finish. */
#define SHUTDOWN_GRACE_MS	3000
#define HOUSEKEEPING_MS		1000
/* Longest a per-second housekeeping call may hold up the loop. */
#define HOUSEKEEPING_TIMEOUT_MS	1000
/* Pause of the per-second calls after one failed (e.g. timed out). */
#define HOUSEKEEPING_BACKOFF_MS	10000
/* How often a dispatcher settles expired leases (SettleExpiredLeases). */
#define SETTLE_INTERVAL_MS	1000
/* How often effects held behind open circuits are checked against circuit_max_hold. */
#define HELD_CHECK_MS		10000

/*
 * Status look-ups of unknown effects (src/outbox/outbox_lookups.c) are claimed at
 * most once a second, LOOKUP_BATCH at a time: unknown effects are rare,
 * and their look-ups wait seconds to an hour between asks anyway.
 */
#define LOOKUP_INTERVAL_MS	1000
#define LOOKUP_BATCH		16
/*
 * On a Citus worker, each of these sweeps is a statement per shard that
 * Citus plans with the shard's ~2,048 buckets: an idle worker spent some
 * 60 ms of CPU a second on them. There they run every 10 s. Nothing waits
 * on them: a token past expires_at is refused when consumed, and another
 * node's leases get 60 s past their expiry before anyone settles them.
 */
#define WORKER_SWEEP_MS		10000
/*
 * On Citus the alerts read every shard, some 16 statements across the
 * cluster (about 0.3 s): the coordinator publishes them every 10 s, and,
 * sending nothing itself, can give them longer than the per-second calls.
 */
#define DISTRIBUTED_ALERTS_MS			10000
#define DISTRIBUTED_ALERTS_TIMEOUT_MS	10000
#define PURGE_INTERVAL_MS	(SECS_PER_HOUR * 1000)
/* The first purge runs this long after the dispatcher starts. */
#define FIRST_PURGE_DELAY_MS	(SECS_PER_MINUTE * 1000)

/* A batch of claimed effects; its memory goes when its last effect is recorded. */
typedef struct ClaimBatch
{
	MemoryContext cxt;
	int			remaining;
	pg_uuid_t	owner;
} ClaimBatch;

/* How a claimed effect ends in this process. */
typedef enum ItemFate
{
	FATE_SENT,					/* the HTTP result decides */
	FATE_RELEASE,				/* never sent: back to pending, attempt uncounted */
	FATE_HOLD,					/* never sent, its secret missing: the same, later */
	FATE_DENIED					/* URL no longer allowed: rejected */
} ItemFate;

/* One claimed effect. */
typedef struct Claimed
{
	HttpRequest req;			/* must stay first: HttpPoll returns &req */
	ClaimBatch *batch;
	pg_uuid_t	effect_id;
	int			attempt;
	bool		honors_key;
	char	   *provider_id_field;
	ItemFate	fate;
	const char *denied_why;
	char	   *secret_missing;	/* a secret its headers name that is missing (FATE_HOLD) */
	bool		probe;			/* its endpoint's circuit is open: this is the probe */
	bool		lookup;			/* a status look-up (GET) of an unknown effect */
	int			record_failures;
	double		rate_limit;		/* endpoint's requests/s; 0 = none */
	int			endpoint_max;	/* endpoint's max_in_flight; 0 = none */
	bool		limit_counted;	/* counted in flight by src/policy/rate_limit.c */
	TimestampTz waiting_since;	/* when it began waiting for its limits */
	struct Claimed *next;			/* in the list of items to record */
} Claimed;

/* The dispatcher's state across loop iterations. */
static int	my_slot = -1;
static DispatcherSlot *my_shared = NULL;
static Claimed *to_record = NULL;	/* finished, outcome not yet recorded */
static int	n_to_record = 0;
static TimestampTz oldest_to_record_at = 0;	/* when the list became non-empty */
static Claimed **started = NULL;	/* claimed in the last round, not yet started */
static Claimed **waiting = NULL;	/* waiting for their endpoint's limits, in claim order */
static int	n_waiting = 0;
static int	n_started = 0;
static HttpRequest **done_buf = NULL;
static int	done_buf_len = 0;
static bool solo_recording = false;
static ClaimBatch *claiming = NULL;	/* batch being filled by ClaimEffects */
static TimestampTz next_settle = 0;	/* when RoundWork settles expired leases next */
static bool gone_leases_settled = false;	/* see src/delivery/dispatcher_leases.c */
static TimestampTz next_held_check = 0;	/* when DeadLetterHeldTooLong runs next */
static TimestampTz next_lookups = 0;	/* when ClaimLookups runs next */

/* ---------------------------------------------------------------- SQL */

static SavedStatement extversion_stmt = {
	"SELECT extversion FROM pg_catalog.pg_extension"
	" WHERE extname OPERATOR(pg_catalog.=) 'idemgate'",
	0, {0}
};

static SavedStatement function_exists_stmt = {
	"SELECT pg_catalog.to_regprocedure($1) IS NOT NULL",
	1, {TEXTOID}
};

static SavedStatement expire_approvals_stmt = {
	"SELECT idemgate.expire_approvals()", 0, {0}
};

static SavedStatement complete_settled_runs_stmt = {
	"SELECT idemgate.complete_settled_runs($1::pg_catalog.int4)",
	1, {FLOAT8OID}
};

static SavedStatement publish_alerts_stmt = {
	"SELECT idemgate.publish_alerts()", 0, {0}
};

static SavedStatement purge_stmt = {
	"SELECT idemgate.purge(pg_catalog.make_interval(secs => $1))",
	1, {FLOAT8OID}
};

/* ----------------------------------------------------- outcomes */

/* UuidText formats a uuid for messages. */
static char *
UuidText(pg_uuid_t *u)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(u)));
}

/* ReleaseItem gives an unsent effect back to pending, after hold_secs (0: as due before). */
static void
ReleaseItem(Claimed *it, double hold_secs)
{
	GiveBackEffect(&it->effect_id, &it->batch->owner, hold_secs);
	pg_atomic_fetch_add_u64(&my_shared->released, 1);
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
		pg_atomic_fetch_add_u64(&my_shared->completed, 1);
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
		pg_atomic_fetch_add_u64(&my_shared->failed, 1);
		return;
	}

	if (r->curl_code == CURLE_OK)
	{
		if (status >= 200 && status < 300)
		{
			char	   *pid = ProviderIdFrom(r->resp_body, r->resp_len, it->provider_id_field);

			if (CompleteEffect(&it->effect_id, owner, pid, status))
				pg_atomic_fetch_add_u64(&my_shared->completed, 1);
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
			snprintf(msg, sizeof(msg), "connection %s without a response after the request was sent",
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
		pg_atomic_fetch_add_u64(&my_shared->failed, 1);
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
static void
QueueForRecording(Claimed *it)
{
	if (n_to_record == 0)
		oldest_to_record_at = GetCurrentTimestamp();
	it->next = to_record;
	to_record = it;
	n_to_record++;
}

/* ---------------------------------------------------------- rounds */

/* This node's Citus group (0: the coordinator), -1 on a single node. */
static int	node_group = -1;

/* A Citus worker before distribute(): no claims, no housekeeping. */
static bool awaiting_distribute = false;

/*
 * SetHeaderLines gives item it its request's header lines: first and
 * second, then the endpoint's own (headers, a text[] of "Name: value"),
 * each ${secret:NAME} resolved here, in memory only (src/policy/secrets.c). A
 * secret the file lacks is noted in it->secret_missing (the item is held).
 */
static void
SetHeaderLines(Claimed *it, Datum headers, const char *first, const char *second)
{
	MemoryContext cxt = it->batch->cxt;
	Datum	   *hdatums;
	bool	   *hnulls;
	int			nh;
	char	  **hlines;
	int			nlines = 0;

	deconstruct_array(DatumGetArrayTypeP(headers), TEXTOID, -1, false, TYPALIGN_INT,
					  &hdatums, &hnulls, &nh);
	hlines = MemoryContextAlloc(cxt, sizeof(char *) * (nh + 2));
	hlines[nlines++] = MemoryContextStrdup(cxt, first);
	hlines[nlines++] = MemoryContextStrdup(cxt, second);
	for (int h = 0; h < nh; h++)
	{
		char	   *line;
		char	   *missing;

		if (hnulls[h])
			continue;
		line = ResolveSecrets(TextDatumGetCString(hdatums[h]), &missing);
		if (line == NULL)
		{
			it->secret_missing = MemoryContextStrdup(cxt, missing);
			continue;
		}
		if (!HttpHeaderLineSafe(line))
			continue;			/* a CR/LF could smuggle headers: drop it */
		hlines[nlines++] = MemoryContextStrdup(cxt, line);
	}
	it->req.headers = (const char *const *) hlines;
	it->req.nheaders = nlines;
}

/*
 * TakeClaimedRows turns the rows a claim statement just marked sending
 * (SPI_tuptable) into items of batch arg, appended to started[] (a
 * ClaimedRowsReader: on Citus it is called once per shard).
 */
static void
TakeClaimedRows(void *arg)
{
	ClaimBatch *b = (ClaimBatch *) arg;
	MemoryContext bcxt = b->cxt;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Claimed	   *it = MemoryContextAllocZero(bcxt, sizeof(Claimed));
		int64		timeout_ms;
		text	   *body;

		it->batch = b;
		memcpy(&it->effect_id, DatumGetUUIDP(GetResultDatum(i, 1, &isnull)), sizeof(pg_uuid_t));
		it->attempt = DatumGetInt32(GetResultDatum(i, 2, &isnull));
		it->req.url = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, 3, &isnull)));
		timeout_ms = DatumGetInt64(GetResultDatum(i, 4, &isnull));
		it->req.timeout_ms = (long) Max(Min(timeout_ms, (int64) IDEMGATE_MAX_REQUEST_TIMEOUT_SECS * 1000), 1);
		it->honors_key = DatumGetBool(GetResultDatum(i, 5, &isnull));
		it->provider_id_field = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, 6, &isnull)));

		SetHeaderLines(it, GetResultDatum(i, 7, &isnull), "Content-Type: application/json",
					   psprintf("Idempotency-Key: %s", UuidText(&it->effect_id)));

		it->req.effect_type = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, 9, &isnull)));
		{
			Datum		d = GetResultDatum(i, 10, &isnull);

			it->rate_limit = isnull ? 0 : DatumGetFloat8(d);
			d = GetResultDatum(i, 11, &isnull);
			it->endpoint_max = isnull ? 0 : DatumGetInt32(d);
		}
		body = DatumGetTextPP(GetResultDatum(i, 8, &isnull));
		it->req.body_len = VARSIZE_ANY_EXHDR(body);
		it->req.body = MemoryContextAlloc(bcxt, it->req.body_len + 1);
		memcpy(unconstify(char *, it->req.body), VARDATA_ANY(body), it->req.body_len);
		unconstify(char *, it->req.body)[it->req.body_len] = '\0';

		it->fate = it->secret_missing ? FATE_HOLD : FATE_SENT;
		b->remaining++;
		started[n_started++] = it;
	}
}

/*
 * ClaimProbes claims, for each open circuit whose probe is due, its oldest
 * due effect as the probe (src/policy/endpoint_circuits.c), up to limit in all.
 * The probe is taken by a compare-and-set on the circuit after the claim,
 * so a dispatcher with nothing of that type due writes nothing; one that
 * loses the race gives its effect back at once.
 */
static void
ClaimProbes(int limit, ClaimBatch *b)
{
	const char *type;
	int			probes;

	CircuitsRefresh(false);
	for (int k = 0; limit > 0 && (type = CircuitNextProbe(k, &probes)) != NULL; k++)
	{
		int			before = n_started;
		Claimed    *it;

		if (ClaimOfTypeForDispatch(type, 0, 1, &b->owner,
								   UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
								   TakeClaimedRows, b) == 0 || n_started == before)
			continue;
		it = started[n_started - 1];
		if (CircuitTakeProbe(type, &b->owner, it->req.timeout_ms / 1000.0 + LEASE_MARGIN_SECS))
		{
			it->probe = true;
			limit--;
			k--;				/* CircuitTakeProbe took it off the due list */
		}
		else
		{
			GiveBackEffect(&it->effect_id, &b->owner, 0);
			n_started--;
			b->remaining--;
			k--;				/* likewise */
		}
	}
}

/* CollectIds collects the ids of claimed rows (a ClaimedRowsReader). */
static void
CollectIds(void *arg)
{
	List	  **ids = (List **) arg;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		pg_uuid_t  *id = palloc(sizeof(pg_uuid_t));

		memcpy(id, DatumGetUUIDP(GetResultDatum(i, 1, &isnull)), sizeof(pg_uuid_t));
		*ids = lappend(*ids, id);
	}
}

/*
 * DeadLetterHeldTooLong dead-letters, as unavailable, the effects held
 * behind an open circuit for longer than idemgate.circuit_max_hold: they
 * are claimed (never sent) and failed at once, 100 per type and round.
 */
static void
DeadLetterHeldTooLong(void)
{
	const char *type;
	pg_uuid_t	owner;
	char	   *why;

	why = psprintf("held by the open circuit of its endpoint for longer than idemgate.circuit_max_hold (%d s)",
				   IdemgateCircuitMaxHoldSecs);
	DispatcherLeaseOwner(&owner);
	for (int k = 0; (type = CircuitOpenLongerThan(k, IdemgateCircuitMaxHoldSecs)) != NULL; k++)
	{
		List	   *ids = NIL;
		ListCell   *lc;

		ClaimOfTypeForDispatch(type, IdemgateCircuitMaxHoldSecs, 100, &owner,
							   UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC), CollectIds, &ids);
		foreach(lc, ids)
			if (FailEffectWith(lfirst(lc), &owner, "unavailable", why, -1, 0, FAIL_NOW) != NULL)
				pg_atomic_fetch_add_u64(&my_shared->failed, 1);
		if (ids != NIL)
			ereport(LOG,
					(errmsg_plural("idemgate dispatcher: %d effect of type \"%s\" dead-lettered: %s",
								   "idemgate dispatcher: %d effects of type \"%s\" dead-lettered: %s",
								   list_length(ids), list_length(ids), type, why)));
	}
}

/* ClaimEffects claims up to limit effects; the items go to started[]. */
static void
ClaimEffects(int limit)
{
	ClaimBatch *b;
	MemoryContext bcxt;

	bcxt = AllocSetContextCreate(TopMemoryContext, "idemgate claim batch",
								 ALLOCSET_SMALL_SIZES);
	b = MemoryContextAllocZero(bcxt, sizeof(ClaimBatch));
	b->cxt = bcxt;
	claiming = b;
	DispatcherLeaseOwner(&b->owner);	/* names this dispatcher and life */

	ClaimDueForDispatch(limit, &b->owner, UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
						TakeClaimedRows, b);
	ClaimProbes(limit - n_started, b);
	claiming = NULL;
	if (b->remaining == 0)
		MemoryContextDelete(bcxt);
	pg_atomic_fetch_add_u64(&my_shared->claimed, n_started);
}

/*
 * TakeLookupRows turns the unknown effects ClaimUnknownForLookup just
 * leased (SPI_tuptable) into status look-ups of batch arg, GETs of their
 * endpoint's status URL, appended to started[] (a ClaimedRowsReader).
 */
static void
TakeLookupRows(void *arg)
{
	ClaimBatch *b = (ClaimBatch *) arg;
	MemoryContext bcxt = b->cxt;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Claimed    *it = MemoryContextAllocZero(bcxt, sizeof(Claimed));
		Datum		d;
		char	   *provider_id;
		char	   *url;

		it->batch = b;
		it->lookup = true;
		memcpy(&it->effect_id, DatumGetUUIDP(GetResultDatum(i, LOOKUP_COL_EFFECT_ID, &isnull)),
			   sizeof(pg_uuid_t));
		d = GetResultDatum(i, LOOKUP_COL_PROVIDER_ID, &isnull);
		provider_id = isnull ? NULL : TextDatumGetCString(d);
		url = StatusUrlFor(TextDatumGetCString(GetResultDatum(i, LOOKUP_COL_STATUS_URL, &isnull)),
						   UuidText(&it->effect_id), provider_id);
		if (url == NULL)		/* the claim asked for a provider id: not reached */
			url = "";
		it->req.url = MemoryContextStrdup(bcxt, url);
		it->req.timeout_ms = (long) Max(Min(DatumGetInt64(GetResultDatum(i, LOOKUP_COL_TIMEOUT_MS, &isnull)),
											(int64) IDEMGATE_MAX_REQUEST_TIMEOUT_SECS * 1000), 1);
		it->req.body = NULL;	/* GET: a look-up decides nothing at the provider */
		SetHeaderLines(it, GetResultDatum(i, LOOKUP_COL_HEADERS, &isnull), "Accept: application/json",
					   "Cache-Control: no-cache");
		it->req.effect_type = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, LOOKUP_COL_EFFECT_TYPE, &isnull)));
		it->provider_id_field = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, LOOKUP_COL_PROVIDER_ID_FIELD, &isnull)));
		d = GetResultDatum(i, LOOKUP_COL_RATE_LIMIT, &isnull);
		it->rate_limit = isnull ? 0 : DatumGetFloat8(d);
		d = GetResultDatum(i, LOOKUP_COL_MAX_IN_FLIGHT, &isnull);
		it->endpoint_max = isnull ? 0 : DatumGetInt32(d);
		it->fate = it->secret_missing ? FATE_HOLD : FATE_SENT;
		b->remaining++;
		started[n_started++] = it;
	}
}

/*
 * ClaimLookups leases up to limit unknown effects for a status look-up
 * (src/outbox/outbox_lookups.c); the items go to started[] with the claimed
 * effects, under the same kill switch, pauses, send barrier and limits.
 */
static void
ClaimLookups(int limit)
{
	ClaimBatch *b;
	MemoryContext bcxt;

	bcxt = AllocSetContextCreate(TopMemoryContext, "idemgate look-up batch",
								 ALLOCSET_SMALL_SIZES);
	b = MemoryContextAllocZero(bcxt, sizeof(ClaimBatch));
	b->cxt = bcxt;
	claiming = b;
	DispatcherLeaseOwner(&b->owner);
	ClaimUnknownForLookup(limit, &b->owner, UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
						  TakeLookupRows, b);
	claiming = NULL;
	if (b->remaining == 0)
		MemoryContextDelete(bcxt);
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
static void
RecordQueued(void)
{
	int			n = 0;
	int			i = 0;
	pg_uuid_t  *ids;
	pg_uuid_t  *owners;
	char	  **pids;
	int		   *statuses;
	bool	   *completed;

	for (Claimed *it = to_record; it != NULL; it = it->next)
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
	for (Claimed *it = to_record; it != NULL; it = it->next)
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
	pg_atomic_fetch_add_u64(&my_shared->completed,
							CompleteEffects(n, ids, owners, pids, statuses, completed));
}

/* FinishQueued frees the queued items after their transaction committed. */
static void
FinishQueued(void)
{
	Claimed	   *it = to_record;

	while (it != NULL)
	{
		Claimed	   *next = it->next;

		ItemRecorded(it);
		it = next;
	}
	to_record = NULL;
	n_to_record = 0;
}

/* ExtensionInstalled tells whether this database has the idemgate extension. */
static bool
ExtensionInstalled(void)
{
	return OidIsValid(get_extension_oid("idemgate", true));
}

/*
 * SchemaMatchesLibrary tells whether the installed extension is the version
 * this library was built for. Between installing a new library and
 * ALTER EXTENSION idemgate UPDATE the schema is older than the code: the
 * dispatcher then claims nothing (outcomes already in flight are still
 * recorded) and says once what to run.
 */
static bool
SchemaMatchesLibrary(void)
{
	static bool said_mismatch = false;
	bool		isnull = true;
	char	   *installed = "";

	ExecSaved(&extversion_stmt, NULL, NULL, true, 1);
	if (SPI_processed == 1)
	{
		Datum		v = GetResultDatum(0, 1, &isnull);

		if (!isnull)
			installed = TextDatumGetCString(v);
	}
	if (strcmp(installed, IDEMGATE_VERSION) == 0)
	{
		said_mismatch = false;
		return true;
	}
	if (!said_mismatch)
		ereport(LOG,
				(errmsg("idemgate dispatcher: extension version %s installed, library is %s; not claiming",
						installed, IDEMGATE_VERSION),
				 errhint("Run ALTER EXTENSION idemgate UPDATE in database \"%s\".",
						 IdemgateDatabase)));
	said_mismatch = true;
	return false;
}

/*
 * RunInTransaction runs work(arg) in a transaction of its own with SPI
 * connected. An error is logged and rolled back, and false is returned, so
 * the worker loop always goes on.
 *
 * Every transaction of the dispatcher is READ COMMITTED, whatever
 * default_transaction_isolation says (PostgreSQL's own InitPostgres does
 * the same for its catalog reads): its statements are written for a
 * snapshot of their own each (a claim sees every effect and kill switch
 * change committed before it; the switch read right before a send is the
 * last one committed), and a REPEATABLE READ or SERIALIZABLE default
 * would add serialization failures to every round under load. Set before
 * the transaction's first snapshot; test/t/150_serializable_default.pl.
 */
static bool
RunInTransaction(void (*work) (void *arg), void *arg, MemoryContext loop_cxt)
{
	volatile bool ok = false;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		XactIsoLevel = XACT_READ_COMMITTED;
		PushActiveSnapshot(GetTransactionSnapshot());
		ConnectSPI();
		work(arg);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		ok = true;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(loop_cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(loop_cxt);
	/* Let autovacuum see our churn (rate-limited inside to once a second). */
	pgstat_report_stat(false);
	return ok;
}

/*
 * StopIfPostmasterDied exits at once when the postmaster is gone: nothing
 * more is claimed, sent or recorded, and the server can restart (a process
 * still attached to the old shared memory blocks that). Cheap: on Linux it
 * reads a flag set by the parent-death signal. Called on every loop path.
 */
static void
StopIfPostmasterDied(void)
{
	if (!PostmasterIsAlive())
		proc_exit(1);
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
static void
RecordAlone(MemoryContext loop_cxt)
{
	Claimed    *list = to_record;

	to_record = NULL;
	n_to_record = 0;
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
						(errmsg("idemgate dispatcher: could not record the outcome of effect %s; its lease will settle it",
								UuidText(&it->effect_id))));
			ItemRecorded(it);
		}
		else
			QueueForRecording(it);
	}
}

/* What one round asks for and got (RoundWork's argument). */
typedef struct RoundRequest
{
	int			limit;
	int			claimed;
	bool		settled_gone;	/* gone dispatchers' leases were settled */
} RoundRequest;

/* RoundWork is DoRound's transaction (a RunInTransaction work). */
static void
RoundWork(void *arg)
{
	RoundRequest *round = (RoundRequest *) arg;

	if (ExtensionInstalled())
	{
		node_group = DispatcherLeaseNode();	/* on Citus (after distribute()) */
		if (!solo_recording)	/* else recorded afterwards, one by one */
			RecordQueued();
		awaiting_distribute = CitusWorkerBeforeDistribute();
		if (awaiting_distribute)
			return;
		if (!gone_leases_settled)
		{
			int			n = SettleGoneDispatchersLeases();

			if (n > 0)
				ereport(LOG,
						(errmsg("idemgate dispatcher: settled %d effects leased by dispatchers that are gone", n)));
			round->settled_gone = true;
		}
		/* Leases last at least 10 s: settling once a second is enough. */
		/* On Citus each worker settles its own shards; the coordinator has none. */
		if (GetCurrentTimestamp() >= next_settle && node_group != 0)
		{
			SettleExpiredLeases(NULL);
			next_settle = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  node_group > 0 ? WORKER_SWEEP_MS : SETTLE_INTERVAL_MS);
		}
		if (round->limit > 0 && SchemaMatchesLibrary() && ActionsEnabled())
		{
			ClaimEffects(round->limit);
			round->claimed = n_started;
			if (n_started < round->limit && GetCurrentTimestamp() >= next_lookups)
			{
				ClaimLookups(Min(round->limit - n_started, LOOKUP_BATCH));
				next_lookups = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), LOOKUP_INTERVAL_MS);
			}
			if (GetCurrentTimestamp() >= next_held_check)
			{
				DeadLetterHeldTooLong();
				next_held_check = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HELD_CHECK_MS);
			}
		}
	}
	else if (n_to_record > 0)
		elog(WARNING, "idemgate dispatcher: extension dropped with effects in flight");
}

/*
 * DoRound runs one transaction: record the finished outcomes, settle
 * expired leases, and claim up to limit effects when the kill switch is on.
 * Returns how many were claimed (placed in started[]), or -1 on error.
 */
static int
DoRound(int limit, MemoryContext loop_cxt)
{
	RoundRequest round = {limit, 0, false};
	bool		failed;

	StopIfPostmasterDied();
	pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: recording and claiming");
	failed = !RunInTransaction(RoundWork, &round, loop_cxt);
	StopIfPostmasterDied();

	if (failed)
	{
		/* The claim rolled back: nothing of it may be sent. */
		for (int i = 0; i < n_started; i++)
		{
			ClaimBatch *b = started[i]->batch;

			if (--b->remaining == 0 && b != claiming)
				MemoryContextDelete(b->cxt);
		}
		n_started = 0;
		if (claiming != NULL)
			MemoryContextDelete(claiming->cxt);
		claiming = NULL;
		if (n_to_record > 0)
			RecordAlone(loop_cxt);
		return -1;
	}
	if (solo_recording && n_to_record > 0)
		RecordAlone(loop_cxt);
	else
		FinishQueued();
	solo_recording = false;
	if (round.settled_gone)
		gone_leases_settled = true;
	pg_atomic_fetch_add_u64(&my_shared->rounds, 1);
	pg_atomic_write_u64(&my_shared->last_round_at, (uint64) GetCurrentTimestamp());
	return round.claimed;
}

/*
 * ReadActionsEnabled reads the kill switch, and the switch and pauses for
 * the send barrier (a RunInTransaction work).
 */
static void
ReadActionsEnabled(void *arg)
{
	*(bool *) arg = ExtensionInstalled() && ActionsEnabled();
	SendBarrierRefresh();
}

/* RefreshSendBarrier reads the committed switch and pauses (a RunInTransaction work). */
static void
RefreshSendBarrier(void *arg)
{
	SendBarrierRefresh();
}

/*
 * StartWaiting starts the waiting effects whose endpoint's rate_limit and
 * max_in_flight allow it now (src/policy/rate_limit.c), in claim order. One that
 * waited longer than half the lease margin goes back to pending unsent, so
 * its lease can never expire before its outcome is recorded.
 */
static void
StartWaiting(void)
{
	int			kept = 0;
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < n_waiting; i++)
	{
		Claimed    *it = waiting[i];
		int64		wait_usecs;

		if (got_sigterm ||
			TimestampDifferenceExceeds(it->waiting_since, now, LEASE_MARGIN_SECS * 1000 / 2))
		{
			it->fate = FATE_RELEASE;
			QueueForRecording(it);
		}
		else if (RateLimitTryStart(it->req.effect_type, it->rate_limit, it->endpoint_max,
								   &wait_usecs))
		{
			it->limit_counted = true;
			if (!HttpStart(&it->req))
			{
				RateLimitFinish(it->req.effect_type);
				it->limit_counted = false;
				QueueForRecording(it);
			}
		}
		else
			waiting[kept++] = it;
	}
	n_waiting = kept;
}

/*
 * SendStarted hands the claimed effects to libcurl after re-checking the
 * kill switch (immediately before the send) and each endpoint URL. Effects
 * that may not be sent are queued for recording (released or rejected).
 */
static void
SendStarted(MemoryContext loop_cxt)
{
	bool		enabled = false;

	if (n_started == 0)
		return;

	/* An error reading the switch counts as off: nothing is sent. */
	if (!RunInTransaction(ReadActionsEnabled, &enabled, loop_cxt))
		enabled = false;
	StopIfPostmasterDied();

	for (int i = 0; i < n_started; i++)
	{
		Claimed	   *it = started[i];
		char	   *why;

		if (!enabled || got_sigterm)
		{
			it->fate = FATE_RELEASE;
			QueueForRecording(it);
		}
		else if (it->fate == FATE_HOLD)
		{
			static TimestampTz said_at = 0;	/* one line per hold period, not per effect */

			if (TimestampDifferenceExceeds(said_at, GetCurrentTimestamp(), IDEMGATE_SECRET_HOLD_SECS * 1000))
			{
				said_at = GetCurrentTimestamp();
				ereport(LOG,
						(errmsg("idemgate dispatcher: effects of type \"%s\" held for %d s: its endpoint names secret \"%s\", %s",
								it->req.effect_type, IDEMGATE_SECRET_HOLD_SECS, it->secret_missing,
								SecretsProblem() ? psprintf("but %s", SecretsProblem()) :
								"which idemgate.secrets_file lacks"),
						 errhint("Add the secret to the file and reload; the alert secret_missing names the endpoint meanwhile.")));
			}
			QueueForRecording(it);
		}
		else if (!EndpointUrlAllowed(it->req.url, &why))
		{
			it->fate = FATE_DENIED;
			it->denied_why = MemoryContextStrdup(it->batch->cxt,
												 psprintf("endpoint URL no longer allowed: %s", why));
			QueueForRecording(it);
		}
		else if (it->rate_limit > 0 || it->endpoint_max > 0)
		{
			it->waiting_since = GetCurrentTimestamp();
			waiting[n_waiting++] = it;	/* StartWaiting starts it */
		}
		else if (!HttpStart(&it->req))
			QueueForRecording(it);	/* a local failure: recorded as transport */
	}
	n_started = 0;
	StartWaiting();
	pg_atomic_write_u32(&my_shared->in_flight, (uint32) HttpInFlight());
}

/* CollectFinished moves finished requests to the list to record. */
static void
CollectFinished(long timeout_ms)
{
	int			n;

	if (HttpInFlight() == 0)
		return;
	StopIfPostmasterDied();
	/* The wait also ends when the postmaster dies (its pipe reads EOF). */
	n = HttpPoll(timeout_ms, postmaster_alive_fds[POSTMASTER_FD_WATCH],
				 done_buf, done_buf_len);
	StopIfPostmasterDied();
	for (int i = 0; i < n; i++)
	{
		Claimed    *it = (Claimed *) done_buf[i];

		if (it->req.held)
			it->fate = FATE_RELEASE;	/* the send barrier refused it unsent */
		if (it->limit_counted)
		{
			RateLimitFinish(it->req.effect_type);
			it->limit_counted = false;
		}
		QueueForRecording(it);
	}
	pg_atomic_write_u32(&my_shared->in_flight, (uint32) HttpInFlight());
}

/* ------------------------------------------------------ housekeeping */

/* A housekeeping call (HousekeepingWork's argument). */
typedef struct HousekeepingCall
{
	const char *signature;
	SavedStatement *stmt;
	double		arg;
	int			timeout_ms;		/* statement_timeout for the call; 0 = none */
} HousekeepingCall;

/* HousekeepingWork runs the call if its function exists (a RunInTransaction work). */
static void
HousekeepingWork(void *arg)
{
	HousekeepingCall *call = (HousekeepingCall *) arg;
	Datum		name;
	bool		isnull;

	if (!ExtensionInstalled())
		return;
	name = CStringGetTextDatum(call->signature);
	ExecSaved(&function_exists_stmt, &name, NULL, true, 1);
	if (SPI_processed == 1 && DatumGetBool(GetResultDatum(0, 1, &isnull)) && !isnull)
	{
		Datum		a = Float8GetDatum(call->arg);

		pgstat_report_activity(STATE_RUNNING, call->stmt->sql);
		/* A background worker's SPI calls are not timed by statement_timeout. */
		if (call->timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, call->timeout_ms);
		ExecSaved(call->stmt, call->stmt->nargs > 0 ? &a : NULL, NULL, false, 0);
		disable_timeout(STATEMENT_TIMEOUT, false);
	}
}

/*
 * HotPathPlanning sets how this session plans: for the rounds (hot), only
 * index scans, and plain ones; for housekeeping, the configured planner.
 * Every statement of a round (claim, completion, failure, settle) is an
 * index probe by design, but a generic plan is made once, possibly while
 * the outbox is empty, and with a seqscan allowed it became a sequential
 * scan of the whole outbox for every claim once the table had grown
 * (bench/dispatch: 71% of the dispatcher's CPU). A bitmap index scan never
 * marks the index entries of dead rows (kill_prior_tuple), and every
 * effect leaves dead entries in the partial indexes on state until
 * vacuum; a plain index scan skips them after its first visit.
 */
static void
HotPathPlanning(bool hot)
{
	SetConfigOption("enable_seqscan",
					hot ? "off" : GetConfigOptionResetString("enable_seqscan"),
					PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("enable_bitmapscan",
					hot ? "off" : GetConfigOptionResetString("enable_bitmapscan"),
					PGC_USERSET, PGC_S_SESSION);
}

/*
 * RunIfExists calls a housekeeping function in its own transaction when it
 * exists, cancelled after timeout_ms (0 = no limit); an error is logged, the
 * loop goes on, and false is returned.
 */
static bool
RunIfExists(const char *signature, SavedStatement *stmt, double arg,
			int timeout_ms, MemoryContext loop_cxt)
{
	HousekeepingCall call = {signature, stmt, arg, timeout_ms};
	bool		ok;

	HotPathPlanning(false);
	ok = RunInTransaction(HousekeepingWork, &call, loop_cxt);
	HotPathPlanning(true);
	disable_timeout(STATEMENT_TIMEOUT, false);	/* after an error too */
	/* A saved plan that failed (e.g. function dropped) is prepared afresh. */
	if (!ok)
	{
		if (stmt->plan != NULL)
			SPI_freeplan(stmt->plan);
		stmt->plan = NULL;
		return false;
	}
	return true;
}

/* ------------------------------------------------------- dispatcher */

/* ClearSlot empties our shared slot when the process exits. */
static void
ClearSlot(int code, Datum arg)
{
	if (my_shared != NULL)
	{
		my_shared->procno = -1;
		pg_write_barrier();
		my_shared->pid = 0;
		pg_atomic_write_u32(&my_shared->in_flight, 0);
	}
}

/*
 * ShutdownDispatcher lets requests in flight finish for a short grace
 * period, aborts the rest, records every outcome, and exits.
 */
static void
ShutdownDispatcher(MemoryContext loop_cxt)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SHUTDOWN_GRACE_MS);

	pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: shutting down");
	StartWaiting();				/* got_sigterm: gives the waiting ones back */
	while (HttpInFlight() > 0 && GetCurrentTimestamp() < deadline)
		CollectFinished(MULTI_POLL_MS);	/* stops if the postmaster died */
	if (HttpInFlight() > 0)
	{
		/* Abort what is left: not sent → released; sent → may have happened. */
		int			n = 0;
		Claimed	  **pending = palloc(sizeof(Claimed *) * done_buf_len);

		n = HttpAbortAll((HttpRequest **) pending, done_buf_len);
		for (int i = 0; i < n; i++)
		{
			if (!pending[i]->req.request_sent)
				pending[i]->fate = FATE_RELEASE;
			QueueForRecording(pending[i]);
		}
	}
	if (n_to_record > 0)
		(void) DoRound(0, loop_cxt);
	HttpShutdown();
	proc_exit(0);
}

/* IdemgateDispatcherMain is one dispatcher's loop (see the design note). */
void
IdemgateDispatcherMain(Datum main_arg)
{
	Oid			dboid;
	MemoryContext loop_cxt;
	TimestampTz next_poll = 0;
	TimestampTz next_housekeeping = 0;
	TimestampTz next_purge = 0;
	TimestampTz next_distributed_alerts = 0;
	bool		woken = true;
	bool		last_full = false;

	my_slot = DatumGetInt32(main_arg);
	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, IdemgateSigterm);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("idemgate dispatcher");
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION);
	/*
	 * No JIT: our statements are short index scans, but a generic plan's
	 * estimate (LIMIT $1 unknown) or a housekeeping view can pass
	 * jit_above_cost, and then every round spent milliseconds compiling
	 * and LLVM kept the memory (3k effects/s and 140 MB anonymous RSS
	 * seen in bench/dispatch before this).
	 */
	SetConfigOption("jit", "off", PGC_USERSET, PGC_S_SESSION);
	/*
	 * Our commits are flushed before we go on, whatever the cluster,
	 * database or role says (on, or remote_apply when that is set): a
	 * claim must be durable before its request is sent. With synchronous_commit off (bench/soak runs its database
	 * so) a crash or a killed postmaster lost the claims and completions
	 * of the last WAL writer cycle; recovery put those effects back to
	 * pending and they were sent again — a second delivery to endpoints
	 * that do not honour the Idempotency-Key (docs/dispatcher.md).
	 */
	if (strcmp(GetConfigOption("synchronous_commit", false, false), "remote_apply") != 0)
		SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);

	HotPathPlanning(true);

	if (DispatcherShmem == NULL || my_slot < 0 || my_slot >= IDEMGATE_MAX_DISPATCHERS)
		elog(ERROR, "idemgate dispatcher started without its shared memory");
	if (SlotTakenByLiveProcess(my_slot))
	{
		ereport(LOG, (errmsg("idemgate dispatcher %d already runs; exiting", my_slot)));
		proc_exit(0);
	}
	my_shared = &DispatcherShmem->slots[my_slot];
	my_shared->pid = MyProcPid;
	pg_write_barrier();
	my_shared->procno = ProcNumberOf(MyProc);
	pg_atomic_write_u64(&my_shared->started_at, (uint64) GetCurrentTimestamp());
	DispatcherLeaseBegin(my_slot);
	SendBarrierBegin(my_slot);
	RateLimitBegin(my_slot);
	on_shmem_exit(ClearSlot, (Datum) 0);

	done_buf_len = IDEMGATE_MAX_IN_FLIGHT;
	done_buf = MemoryContextAlloc(TopMemoryContext, sizeof(HttpRequest *) * done_buf_len);
	started = MemoryContextAlloc(TopMemoryContext, sizeof(Claimed *) * done_buf_len);
	waiting = MemoryContextAlloc(TopMemoryContext, sizeof(Claimed *) * done_buf_len);
	HttpInit();

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "idemgate dispatcher loop",
									 ALLOCSET_DEFAULT_SIZES);
	ereport(LOG, (errmsg("idemgate dispatcher %d started", my_slot)));

	for (;;)
	{
		TimestampTz now;
		int			in_flight;
		int			capacity;
		int			batch;
		int			refill;
		bool		want_claim;

		CHECK_FOR_INTERRUPTS();
		StopIfPostmasterDied();
		ReloadConfigIfPending();
		MemoryContextReset(loop_cxt);
		MemoryContextSwitchTo(loop_cxt);

		if (got_sigterm)
			ShutdownDispatcher(loop_cxt);

		/* A switch or pause committed: read it before libcurl sends more. */
		if (SendBarrierStale() && HttpInFlight() > 0)
			(void) RunInTransaction(RefreshSendBarrier, NULL, loop_cxt);
		CollectFinished(0);
		if (n_waiting > 0)
			StartWaiting();
		in_flight = HttpInFlight();
		capacity = Min(IdemgateMaxInFlight, IDEMGATE_MAX_IN_FLIGHT) - in_flight - n_waiting;
		batch = Min(IdemgateBatchSize, capacity);
		refill = Max(1, Min(IdemgateBatchSize, IdemgateMaxInFlight) / 2);
		now = GetCurrentTimestamp();

		/*
		 * Claim when woken, after a full batch (a backlog) or when the poll
		 * interval is up; while requests are in flight, a backlog waits for
		 * half the slots to free so that each commit carries a real batch.
		 */
		want_claim = batch > 0 && (woken || last_full || now >= next_poll) &&
			(in_flight == 0 || batch >= refill || !last_full);

		/*
		 * Record when nothing is left in flight, when enough outcomes have
		 * piled up to be worth a commit, when the oldest has waited
		 * RECORD_DELAY_MS (a slow request must not hold up the others'
		 * outcomes), or alongside a claim.
		 */
		if (want_claim ||
			(n_to_record > 0 &&
			 (in_flight == 0 || n_to_record >= refill ||
			  TimestampDifferenceExceeds(oldest_to_record_at, now, RECORD_DELAY_MS))))
		{
			int			claimed;

			if (want_claim)
			{
				woken = false;
				next_poll = TimestampTzPlusMilliseconds(now, IdemgatePollIntervalMs);
			}
			claimed = DoRound(want_claim ? batch : 0, loop_cxt);
			if (want_claim)
				last_full = (claimed == batch);
			if (claimed < 0)
			{
				/* The round failed: back off for a poll interval. */
				last_full = false;
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 IdemgatePollIntervalMs, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				continue;
			}
			SendStarted(loop_cxt);
		}

		/*
		 * Housekeeping, by the first dispatcher only. On Citus
		 * (docs/citus.md) each worker expires the approvals of its own
		 * shards; the coordinator completes settled runs, publishes the
		 * alerts and purges (each a read of every shard).
		 */
		if (my_slot == 0 && now >= next_housekeeping && !awaiting_distribute)
		{
			bool		ok;

			/*
			 * The per-second calls run in this loop, so they are bounded
			 * (HOUSEKEEPING_TIMEOUT_MS): a slow one must not hold up
			 * requests in flight. After a failure they pause a while.
			 */
			pgstat_report_activity(STATE_RUNNING, "idemgate dispatcher: housekeeping");
			ok = node_group == 0 ||	/* on Citus, each worker for its shards */
				RunIfExists("idemgate.expire_approvals()", &expire_approvals_stmt, 0,
							HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
			StopIfPostmasterDied();
			if (node_group <= 0)	/* it reads every shard: the coordinator's */
				ok &= RunIfExists("idemgate.complete_settled_runs(integer)",
								  &complete_settled_runs_stmt, IDEMGATE_SETTLED_RUNS_BATCH,
								  HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
			StopIfPostmasterDied();
			if (node_group < 0)
				ok &= RunIfExists("idemgate.publish_alerts()", &publish_alerts_stmt, 0,
								  HOUSEKEEPING_TIMEOUT_MS, loop_cxt);
			else if (node_group == 0 && now >= next_distributed_alerts)
			{
				/* On Citus, the coordinator's, which sends nothing. */
				(void) RunIfExists("idemgate.publish_alerts()", &publish_alerts_stmt, 0,
								   DISTRIBUTED_ALERTS_TIMEOUT_MS, loop_cxt);
				next_distributed_alerts = TimestampTzPlusMilliseconds(now, DISTRIBUTED_ALERTS_MS);
			}
			StopIfPostmasterDied();
			next_housekeeping = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															!ok ? HOUSEKEEPING_BACKOFF_MS :
															node_group > 0 ? WORKER_SWEEP_MS : HOUSEKEEPING_MS);
			if (IdemgateRetentionSecs > 0 && node_group <= 0 && now >= next_purge)
			{
				if (next_purge != 0)
					(void) RunIfExists("idemgate.purge(interval)", &purge_stmt,
									   (double) IdemgateRetentionSecs, 0, loop_cxt);
				next_purge = TimestampTzPlusMilliseconds(now, next_purge == 0 ? FIRST_PURGE_DELAY_MS : PURGE_INTERVAL_MS);
			}
		}

		pgstat_report_activity(STATE_IDLE, NULL);

		/* Wait: for transfers while any are in flight, else for the latch. */
		if (HttpInFlight() > 0)
		{
			CollectFinished(MULTI_POLL_MS);
			if (MyLatch->is_set)
			{
				ResetLatch(MyLatch);
				woken = true;
			}
		}
		else if (!last_full && n_to_record == 0)
		{
			long		sleep_ms;
			int			rc;

			now = GetCurrentTimestamp();
			sleep_ms = (long) ((Min(next_poll, my_slot == 0 ? next_housekeeping : next_poll) - now) / 1000);
			sleep_ms = Max(sleep_ms, 0);
			if (n_waiting > 0)
				sleep_ms = Min(sleep_ms, WAITING_POLL_MS);	/* rate-limited starts */
			pgstat_report_stat(true);	/* idle: flush what is pending */
			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   sleep_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			if (rc & WL_LATCH_SET)
				woken = true;
		}
	}
}

