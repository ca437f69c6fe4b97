/*-------------------------------------------------------------------------
 *
 * src/backoff.c
 *	  Exponential backoff with jitter for effect retries: about 1 s, 4 s,
 *	  16 s, each plus a random fraction of up to half, so that two hundred
 *	  queued effects do not all retry in the same second after an outage.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"

#include "backoff.h"
#include "crypto.h"
#include "guc.h"

#define BACKOFF_BASE_USECS	USECS_PER_SEC
#define BACKOFF_FACTOR		4

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
		delay = Min(retry_after_usecs, cap);
	return delay;
}
