/*-------------------------------------------------------------------------
 *
 * src/backoff.h
 *	  How long an effect waits before its next attempt.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_BACKOFF_H
#define IDEMGATE_BACKOFF_H

#include "postgres.h"

/*
 * BackoffUsecs returns the wait before the attempt after attempt number
 * attempt (1-based): 1 s × 4^(attempt−1) × (1 + U[0, 0.5)) capped by
 * idemgate.max_backoff, or retry_after_usecs when that is longer (< 0 =
 * none; not capped: the caller checks it against RetryAfterLimitUsecs).
 */
extern int64 BackoffUsecs(int attempt, int64 retry_after_usecs);

/*
 * RetryAfterLimitUsecs returns the longest Retry-After honoured: 24 hours,
 * or idemgate.max_backoff when that is longer. A provider asking for more
 * is not retried early: its effect fails (dead letter).
 */
extern int64 RetryAfterLimitUsecs(void);

#endif
