/*-------------------------------------------------------------------------
 *
 * src/policy/rate_limit.h
 *	  Per-endpoint rate_limit and max_in_flight (docs/operations.md), kept by the
 *	  dispatchers in shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RATE_LIMIT_H
#define IDEMGATE_RATE_LIMIT_H

#include "postgres.h"
#include "fmgr.h"
#include "storage/spin.h"

#include "core/idemgate_limits.h"


typedef struct RateEntry
{
	bool		used;
	char		effect_type[IDEMGATE_MAX_NAME_BYTES + 1];
	int64		next_start;		/* TimestampTz: no start before this */
	int32		in_flight[IDEMGATE_MAX_DISPATCHERS];	/* per dispatcher slot */
} RateEntry;

typedef struct RateLimitShared
{
	slock_t		lock;
	RateEntry	entries[IDEMGATE_RATE_LIMIT_ENTRIES];
} RateLimitShared;

/* From _PG_init: defines the segment (src/core/shmem_segment.c). */
extern void RateLimitShmemDefine(void);

/* register_endpoint's trailing arguments (argno, argno + 1). */
extern void EndpointLimitsArgs(FunctionCallInfo fcinfo, int argno,
							   Datum *rate, bool *rate_null,
							   Datum *max_in_flight, bool *max_null);

/* Dispatcher side. */
extern void RateLimitBegin(int slot);
extern bool RateLimitTryStart(const char *effect_type, double rate, int max_in_flight,
							  int64 *wait_usecs);
extern void RateLimitFinish(const char *effect_type);

#endif
