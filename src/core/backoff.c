/*-------------------------------------------------------------------------
 *
 * src/core/backoff.c
 *	  Exponential backoff with jitter for effect retries: about 1 s, 4 s,
 *	  16 s, each plus a random fraction of up to half, so that two hundred
 *	  queued effects do not all retry in the same second after an outage.
 *	  idemgate.max_backoff caps the backoff, not a provider's Retry-After:
 *	  that is honoured in full up to 24 hours (or max_backoff when longer),
 *	  so a retry never comes before the provider said (docs/outbox.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"

#include "core/backoff.h"
#include "core/crypto.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"

#define BACKOFF_BASE_USECS	USECS_PER_SEC
#define BACKOFF_FACTOR		4
#define PROBE_FIRST_USECS	(5 * USECS_PER_SEC)
#define PROBE_MAX_USECS		(300 * USECS_PER_SEC)

/*
 * JitterUsecs returns a uniform value in [0, half) drawn from OpenSSL's
 * CSPRNG. Integer arithmetic keeps the upper bound strict: 24 random bits
 * times half (< 2^40) cannot overflow.
 */
static int64
JitterUsecs(int64 half)
{
	uint8		bytes[3];
	uint64		u24;

	RandomBytes(bytes, sizeof(bytes));
	u24 = ((uint64) bytes[0] << 16) | ((uint64) bytes[1] << 8) | bytes[2];
	return (int64) (((uint64) half * u24) >> 24);
}

/* BackoffUsecs computes the wait before the next attempt; see backoff.h. */
int64
BackoffUsecs(int attempt, int64 retry_after_usecs)
{
	int64		cap = (int64) IdemgateMaxBackoffSecs * USECS_PER_SEC;
	int64		base = BACKOFF_BASE_USECS;
	int64		delay;

	for (int i = 1; i < attempt && base < cap; i++)
		base *= BACKOFF_FACTOR;
	if (base >= cap)
		delay = cap;
	else
		delay = Min(base + JitterUsecs(base / 2), cap);
	if (retry_after_usecs > delay)
		delay = retry_after_usecs;	/* the caller refused longer ones */
	return delay;
}

/* ProbeBackoffUsecs computes the wait before a circuit's next probe; see backoff.h. */
int64
ProbeBackoffUsecs(int probes)
{
	int64		base = PROBE_FIRST_USECS;

	for (int i = 0; i < probes && base < PROBE_MAX_USECS; i++)
		base *= 2;
	base = Min(base, PROBE_MAX_USECS);
	return base - base / 5 + JitterUsecs(base / 5 * 2);
}

/* RetryAfterLimitUsecs is the longest Retry-After honoured; see backoff.h. */
int64
RetryAfterLimitUsecs(void)
{
	return Max((int64) IDEMGATE_MAX_HONOURED_RETRY_AFTER_SECS,
			   (int64) IdemgateMaxBackoffSecs) * USECS_PER_SEC;
}
