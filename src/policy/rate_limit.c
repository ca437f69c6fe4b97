/*-------------------------------------------------------------------------
 *
 * src/policy/rate_limit.c
 *	  Per-endpoint rate_limit (requests per second) and max_in_flight
 *	  (concurrent requests), docs/operations.md, "Endpoints, rate limits and
 *	  delayed effects": register_endpoint's trailing arguments, and their
 *	  enforcement by the dispatchers.
 *
 * Design note. The limits hold for an endpoint as a whole, however many
 * dispatchers send to it, so their state is in shared memory: one entry
 * per limited effect type (IDEMGATE_RATE_LIMIT_ENTRIES, found by name) holding the
 * earliest time the next request may start and the requests in flight per
 * dispatcher slot, all under one spinlock (held for a few comparisons).
 *
 * Rate: starts are spaced at least (1 s + slack)/rate apart (next_start =
 * max(now, next_start) + that at every start, no burst credit), so any
 * half-open one-second window holds at most ceil(rate) starts, and at the
 * provider too while arrival times vary by less than the slack
 * (IDEMGATE_RATE_ARRIVAL_SLACK_USECS: two dispatchers' starts 1/rate apart
 * once reached a sink 51 to a 0.9993 s window at 50/s) — "never more than
 * the rate over any one-second window". A dispatcher that is late (its
 * loop wakes every few milliseconds) only delivers a little under the rate.
 *
 * In flight: a request counts from the moment it is handed to libcurl
 * until its outcome is collected; a start is refused while the sum over
 * all dispatchers reaches max_in_flight. A dispatcher that exits zeroes
 * its column (on_shmem_exit); a crash resets all shared memory anyway.
 *
 * The dispatcher (src/delivery/dispatcher.c) keeps claimed effects whose endpoint
 * refuses a start in a local queue, in claim order, and tries them again
 * every loop; they count against its capacity, so it does not claim what
 * it cannot send. An effect that waited too long for its lease (half the
 * lease margin) goes back to pending unsent, attempt uncounted.
 *
 * When the table is full (more than IDEMGATE_RATE_LIMIT_ENTRIES limited types at
 * once), entries with nothing in flight and no pending spacing are reused;
 * if none is free the request is sent unlimited and a WARNING says so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "policy/rate_limit.h"
#include "core/shmem_segment.h"
#include "citus/statements.h"
#include "core/idemgate_limits.h"

static int	rate_slot = -1;

/* NULL unless the library was preloaded. */
static RateLimitShared *Rates = NULL;

/* InitRateLimits sets up a new segment: an empty table. */
static void
InitRateLimits(void *segment)
{
	RateLimitShared *r = segment;

	SpinLockInit(&r->lock);
	memset(r->entries, 0, sizeof(r->entries));
}

/* RateLimitShmemDefine defines the segment; from _PG_init. */
void
RateLimitShmemDefine(void)
{
	DefineShmemSegment("idemgate rate limits", sizeof(RateLimitShared),
					   InitRateLimits, (void **) &Rates);
}

/* ------------------------------------------------- register_endpoint */

/*
 * EndpointLimitsArgs reads and checks rate_limit (argno) and max_in_flight
 * (argno + 1); absent or NULL means no limit. Bad values raise 22023
 * before anything is written.
 */
void
EndpointLimitsArgs(FunctionCallInfo fcinfo, int argno,
				   Datum *rate, bool *rate_null, Datum *max_in_flight, bool *max_null)
{
	*rate_null = PG_NARGS() <= argno || PG_ARGISNULL(argno);
	*max_null = PG_NARGS() <= argno + 1 || PG_ARGISNULL(argno + 1);
	*rate = (Datum) 0;
	*max_in_flight = (Datum) 0;
	if (!*rate_null)
	{
		double		r = PG_GETARG_FLOAT8(argno);

		if (isnan(r) || r <= 0 || r > IDEMGATE_MAX_RATE_LIMIT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"rate_limit\" must be greater than 0 and at most "
							"%.0f requests per second",
							IDEMGATE_MAX_RATE_LIMIT),
					 errhint("Pass NULL for no rate limit.")));
		*rate = Float8GetDatum(r);
	}
	if (!*max_null)
	{
		int32		m = PG_GETARG_INT32(argno + 1);

		if (m < 1 || m > IDEMGATE_MAX_IN_FLIGHT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"max_in_flight\" must be between 1 and %d, not %d",
							IDEMGATE_MAX_IN_FLIGHT, m),
					 errhint("Pass NULL for the global limit idemgate.max_in_flight.")));
		*max_in_flight = Int32GetDatum(m);
	}
}


/* -------------------------------------------------------- dispatcher */

/* RateLimitOnExit drops this dispatcher's requests in flight from the table. */
static void
RateLimitOnExit(int code, Datum arg)
{
	RateLimitShared *r = Rates;

	SpinLockAcquire(&r->lock);
	for (int i = 0; i < IDEMGATE_RATE_LIMIT_ENTRIES; i++)
		r->entries[i].in_flight[rate_slot] = 0;
	SpinLockRelease(&r->lock);
}

/* RateLimitBegin tells the limiter which dispatcher slot this process is. */
void
RateLimitBegin(int slot)
{
	rate_slot = slot;
	RateLimitOnExit(0, (Datum) 0);	/* a previous holder of the slot */
	on_shmem_exit(RateLimitOnExit, (Datum) 0);
}

/* InFlight sums an entry's requests in flight. */
static int
InFlight(RateEntry *e)
{
	int			n = 0;

	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
		n += e->in_flight[i];
	return n;
}

/* FindEntry finds (or, when create, makes) the entry of effect_type; lock held. */
static RateEntry *
FindEntry(RateLimitShared *r, const char *effect_type, bool create, int64 now)
{
	RateEntry  *spare = NULL;

	for (int i = 0; i < IDEMGATE_RATE_LIMIT_ENTRIES; i++)
	{
		RateEntry  *e = &r->entries[i];

		if (e->used && strcmp(e->effect_type, effect_type) == 0)
			return e;
		if (spare == NULL && (!e->used || (InFlight(e) == 0 && e->next_start <= now)))
			spare = e;
	}
	if (!create || spare == NULL)
		return NULL;
	memset(spare, 0, sizeof(RateEntry));
	spare->used = true;
	strlcpy(spare->effect_type, effect_type, sizeof(spare->effect_type));
	return spare;
}

/*
 * RateLimitTryStart decides whether a request of effect_type may start now
 * under its endpoint's rate (requests/s, <= 0 = none) and max_in_flight
 * (<= 0 = none). On yes the start is counted; on no, *wait_usecs says how
 * long until the rate allows one (0 when it is max_in_flight that refuses).
 */
bool
RateLimitTryStart(const char *effect_type, double rate, int max_in_flight, int64 *wait_usecs)
{
	RateLimitShared *r = Rates;
	int64		now = GetCurrentTimestamp();
	RateEntry  *e;
	bool		ok = true;
	static bool said_full = false;

	*wait_usecs = 0;
	if (rate <= 0 && max_in_flight <= 0)
		return true;
	SpinLockAcquire(&r->lock);
	e = FindEntry(r, effect_type, true, now);
	if (e == NULL)
	{
		SpinLockRelease(&r->lock);
		if (!said_full)
			ereport(WARNING,
					(errmsg("idemgate dispatcher: more than %d rate-limited endpoints at once; "
							"effect type \"%s\" is sent without its limits",
							IDEMGATE_RATE_LIMIT_ENTRIES, effect_type)));
		said_full = true;
		return true;
	}
	if (max_in_flight > 0 && InFlight(e) >= max_in_flight)
		ok = false;
	else if (rate > 0 && now < e->next_start)
	{
		*wait_usecs = e->next_start - now;
		ok = false;
	}
	if (ok)
	{
		if (rate > 0)
			e->next_start = Max(now, e->next_start) +
				(int64) ceil((USECS_PER_SEC + IDEMGATE_RATE_ARRIVAL_SLACK_USECS) / rate);
		e->in_flight[rate_slot]++;
	}
	SpinLockRelease(&r->lock);
	return ok;
}

/* RateLimitFinish counts a request of effect_type out of flight. */
void
RateLimitFinish(const char *effect_type)
{
	RateLimitShared *r = Rates;
	RateEntry  *e;

	SpinLockAcquire(&r->lock);
	e = FindEntry(r, effect_type, false, 0);
	if (e != NULL && e->in_flight[rate_slot] > 0)
		e->in_flight[rate_slot]--;
	SpinLockRelease(&r->lock);
}
