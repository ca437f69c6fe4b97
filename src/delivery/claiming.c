/*-------------------------------------------------------------------------
 *
 * src/delivery/claiming.c
 *	  What a dispatcher claims in its round (docs/dispatcher.md, "A
 *	  round"): due effects, the probes of open circuits, the effects held
 *	  too long behind one, status look-ups of unknown effects; each claimed
 *	  row becomes a Claimed item with its request (URL, headers with their
 *	  secrets resolved, body), appended to dispatch.started.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "citus/statements.h"
#include "core/args.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "delivery/claiming.h"
#include "delivery/dispatch_items.h"
#include "delivery/dispatcher_leases.h"
#include "delivery/outcomes.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"
#include "outbox/outbox_lookups.h"
#include "policy/endpoint_circuits.h"
#include "policy/endpoints.h"
#include "policy/secrets.h"
#include "policy/status_url.h"

/* HeaderValueText is a header's value as jsonb_each_text gives it, or NULL. */
static char *
HeaderValueText(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNull:
			return NULL;
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		default:
			return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	}
}

/*
 * SetHeaderLines gives item it its request's header lines: first and
 * second, then the endpoint's own (headers, its jsonb object of name →
 * value, made "Name: value" here rather than in the claim's statement,
 * where it was a function scan per claimed row), each ${secret:NAME}
 * resolved here, in memory only (src/policy/secrets.c). A secret the file
 * lacks is noted in it->secret_missing (the item is held).
 */
static void
SetHeaderLines(Claimed *it, Datum headers, bool headers_null, const char *first,
			   const char *second)
{
	MemoryContext cxt = it->batch->cxt;
	Jsonb	   *object = headers_null ? NULL : DatumGetJsonbP(headers);
	int			max = object ? JB_ROOT_COUNT(object) : 0;
	char	  **hlines;
	int			nlines = 0;
	JsonbIterator *iter;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;

	hlines = MemoryContextAlloc(cxt, sizeof(char *) * (max + 2));
	hlines[nlines++] = MemoryContextStrdup(cxt, first);
	hlines[nlines++] = MemoryContextStrdup(cxt, second);
	if (object != NULL && JB_ROOT_IS_OBJECT(object))
	{
		iter = JsonbIteratorInit(&object->root);
		while ((tok = JsonbIteratorNext(&iter, &v, true)) != WJB_DONE)
		{
			char	   *value;
			char	   *line;
			char	   *missing;

			if (tok == WJB_KEY)
			{
				name = pnstrdup(v.val.string.val, v.val.string.len);
				continue;
			}
			if (tok != WJB_VALUE || name == NULL)
				continue;
			/* register_endpoint refuses these; a row stored before may hold one */
			value = IsDispatcherHeader(name) ? NULL : HeaderValueText(&v);
			if (value == NULL)
				continue;
			line = ResolveSecrets(psprintf("%s: %s", name, value), &missing);
			if (line == NULL)
			{
				it->secret_missing = MemoryContextStrdup(cxt, missing);
				continue;
			}
			if (!HttpHeaderLineSafe(line))
				continue;		/* a CR/LF could smuggle headers: drop it */
			hlines[nlines++] = MemoryContextStrdup(cxt, line);
		}
	}
	it->req.headers = (const char *const *) hlines;
	it->req.nheaders = nlines;
}

/*
 * SetEndpointOf gives item it what its row (row of SPI_tuptable) says of
 * its endpoint, from the columns given: the effect type, the request's
 * timeout (at most IDEMGATE_MAX_REQUEST_TIMEOUT_SECS), the provider id's
 * field, and the endpoint's limits (0: none).
 */
static void
SetEndpointOf(Claimed *it, uint64 row, int type_col, int timeout_col, int field_col,
			  int rate_col, int max_col)
{
	MemoryContext cxt = it->batch->cxt;
	bool		isnull;
	Datum		d;

	it->req.effect_type =
		MemoryContextStrdup(cxt, TextDatumGetCString(GetResultDatum(row, type_col, &isnull)));
	it->req.timeout_ms = (long) Max(Min(DatumGetInt64(GetResultDatum(row, timeout_col, &isnull)),
										(int64) IDEMGATE_MAX_REQUEST_TIMEOUT_SECS * 1000), 1);
	it->provider_id_field =
		MemoryContextStrdup(cxt, TextDatumGetCString(GetResultDatum(row, field_col, &isnull)));
	d = GetResultDatum(row, rate_col, &isnull);
	it->rate_limit = isnull ? 0 : DatumGetFloat8(d);
	d = GetResultDatum(row, max_col, &isnull);
	it->endpoint_max = isnull ? 0 : DatumGetInt32(d);
}

/* AddStarted appends a claimed item to dispatch.started, held when a secret is missing. */
static void
AddStarted(Claimed *it)
{
	it->fate = it->secret_missing ? FATE_HOLD : FATE_SENT;
	it->batch->remaining++;
	dispatch.started[dispatch.n_started++] = it;
}

/*
 * NewItem allocates an item of batch b for row of SPI_tuptable, whose
 * column id_col is the effect's id.
 */
static Claimed *
NewItem(ClaimBatch *b, uint64 row, int id_col)
{
	Claimed    *it = MemoryContextAllocZero(b->cxt, sizeof(Claimed));
	bool		isnull;

	it->batch = b;
	memcpy(&it->effect_id, DatumGetUUIDP(GetResultDatum(row, id_col, &isnull)),
		   sizeof(pg_uuid_t));
	return it;
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
		Claimed	   *it = NewItem(b, i, 1);
		text	   *body;

		it->attempt = DatumGetInt32(GetResultDatum(i, 2, &isnull));
		it->req.url = MemoryContextStrdup(bcxt, TextDatumGetCString(GetResultDatum(i, 3, &isnull)));
		it->honors_key = DatumGetBool(GetResultDatum(i, 5, &isnull));
		SetEndpointOf(it, i, 9, 4, 6, 10, 11);
		SetHeaderLines(it, GetResultDatum(i, 7, &isnull), isnull, "Content-Type: application/json",
					   psprintf("Idempotency-Key: %s", UuidText(&it->effect_id)));
		body = DatumGetTextPP(GetResultDatum(i, 8, &isnull));
		it->req.body_len = VARSIZE_ANY_EXHDR(body);
		it->req.body = MemoryContextAlloc(bcxt, it->req.body_len + 1);
		memcpy(unconstify(char *, it->req.body), VARDATA_ANY(body), it->req.body_len);
		unconstify(char *, it->req.body)[it->req.body_len] = '\0';
		AddStarted(it);
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
		int			before = dispatch.n_started;
		Claimed    *it;

		if (ClaimOfTypeForDispatch(type, 0, 1, &b->owner,
								   UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
								   TakeClaimedRows, b) == 0 || dispatch.n_started == before)
			continue;
		it = dispatch.started[dispatch.n_started - 1];
		if (CircuitTakeProbe(type, &b->owner, it->req.timeout_ms / 1000.0 + LEASE_MARGIN_SECS))
		{
			it->probe = true;
			limit--;
			k--;				/* CircuitTakeProbe took it off the due list */
		}
		else
		{
			GiveBackEffect(&it->effect_id, &b->owner, 0);
			dispatch.n_started--;
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
void
DeadLetterHeldTooLong(void)
{
	const char *type;
	pg_uuid_t	owner;
	char	   *why;

	why = psprintf("held by the open circuit of its endpoint for longer than "
				   "idemgate.circuit_max_hold (%d s)",
				   IdemgateCircuitMaxHoldSecs);
	DispatcherLeaseOwner(&owner);
	for (int k = 0; (type = CircuitOpenLongerThan(k, IdemgateCircuitMaxHoldSecs)) != NULL; k++)
	{
		List	   *ids = NIL;
		ListCell   *lc;

		ClaimOfTypeForDispatch(type, IdemgateCircuitMaxHoldSecs, 100, &owner,
							   UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
							   CollectIds, &ids);
		foreach(lc, ids)
			if (FailEffectWith(lfirst(lc), &owner, "unavailable", why, -1, 0, FAIL_NOW) != NULL)
				pg_atomic_fetch_add_u64(&dispatch.shared->failed, 1);
		if (ids != NIL)
			ereport(LOG,
					(errmsg_plural("idemgate dispatcher: %d effect of type \"%s\" "
								   "dead-lettered: %s",
								   "idemgate dispatcher: %d effects of type \"%s\" "
								   "dead-lettered: %s",
								   list_length(ids), list_length(ids), type, why)));
	}
}

/*
 * StartBatch makes the batch a claim's items are allocated in (bcxt, a
 * memory context of its own) under a lease owner naming this dispatcher
 * and life, and makes it the one being claimed.
 */
static ClaimBatch *
StartBatch(MemoryContext bcxt)
{
	ClaimBatch *b = MemoryContextAllocZero(bcxt, sizeof(ClaimBatch));

	b->cxt = bcxt;
	dispatch.claiming = b;
	DispatcherLeaseOwner(&b->owner);	/* names this dispatcher and life */
	return b;
}

/* EndBatch ends the claim of batch b; a batch that took nothing is freed. */
static void
EndBatch(ClaimBatch *b)
{
	dispatch.claiming = NULL;
	if (b->remaining == 0)
		MemoryContextDelete(b->cxt);
}

/* ClaimEffects claims up to limit effects; the items go to started[]. */
void
ClaimEffects(int limit)
{
	ClaimBatch *b = StartBatch(AllocSetContextCreate(TopMemoryContext, "idemgate claim batch",
													 ALLOCSET_SMALL_SIZES));

	ClaimDueForDispatch(limit, &b->owner, UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
						TakeClaimedRows, b);
	ClaimProbes(limit - dispatch.n_started, b);
	EndBatch(b);
	pg_atomic_fetch_add_u64(&dispatch.shared->claimed, dispatch.n_started);
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
		Claimed    *it = NewItem(b, i, LOOKUP_COL_EFFECT_ID);
		char	   *provider_id;
		char	   *url;

		it->lookup = true;
		provider_id = GetResultCString(i, LOOKUP_COL_PROVIDER_ID);
		url = StatusUrlFor(TextDatumGetCString(GetResultDatum(i, LOOKUP_COL_STATUS_URL, &isnull)),
						   UuidText(&it->effect_id), provider_id);
		if (url == NULL)		/* the claim asked for a provider id: not reached */
			url = "";
		it->req.url = MemoryContextStrdup(bcxt, url);
		it->req.body = NULL;	/* GET: a look-up decides nothing at the provider */
		SetEndpointOf(it, i, LOOKUP_COL_EFFECT_TYPE, LOOKUP_COL_TIMEOUT_MS,
					  LOOKUP_COL_PROVIDER_ID_FIELD,
					  LOOKUP_COL_RATE_LIMIT, LOOKUP_COL_MAX_IN_FLIGHT);
		SetHeaderLines(it, GetResultDatum(i, LOOKUP_COL_HEADERS, &isnull), isnull,
					   "Accept: application/json",
					   "Cache-Control: no-cache");
		AddStarted(it);
	}
}

/*
 * ClaimLookups leases up to limit unknown effects for a status look-up
 * (src/outbox/outbox_lookups.c); the items go to started[] with the claimed
 * effects, under the same kill switch, pauses, send barrier and limits.
 */
void
ClaimLookups(int limit)
{
	ClaimBatch *b = StartBatch(AllocSetContextCreate(TopMemoryContext, "idemgate look-up batch",
													 ALLOCSET_SMALL_SIZES));

	ClaimUnknownForLookup(limit, &b->owner, UsecsToInterval(LEASE_MARGIN_SECS * USECS_PER_SEC),
						  TakeLookupRows, b);
	EndBatch(b);
}
