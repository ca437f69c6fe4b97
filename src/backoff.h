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
 * attempt (1-based): 1 s × 4^(attempt−1) × (1 + U[0, 0.5)), or
 * retry_after_usecs when that is longer (< 0 = none), capped by
 * idemgate.max_backoff.
 */
extern int64 BackoffUsecs(int attempt, int64 retry_after_usecs);

#endif
