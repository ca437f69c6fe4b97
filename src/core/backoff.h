/*-------------------------------------------------------------------------
 *
 * src/core/backoff.h
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
 * ProbeBackoffUsecs returns the wait before an open circuit's next probe
 * after probes failed probes (src/policy/endpoint_circuits.c): 5 s × 2^probes,
 * capped at 5 minutes, times U[0.8, 1.2) so that the probes of many
 * circuits (and nodes) do not line up.
 */
extern int64 ProbeBackoffUsecs(int probes);

/*
 * RetryAfterLimitUsecs returns the longest Retry-After honoured: 24 hours,
 * or idemgate.max_backoff when that is longer. A provider asking for more
 * is not retried early: its effect fails (dead letter).
 */
extern int64 RetryAfterLimitUsecs(void);

#endif
