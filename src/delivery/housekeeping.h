/*-------------------------------------------------------------------------
 *
 * src/delivery/housekeeping.h
 *	  The first dispatcher's housekeeping calls.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_HOUSEKEEPING_H
#define IDEMGATE_HOUSEKEEPING_H

#include "postgres.h"
#include "datatype/timestamp.h"

/*
 * On a Citus worker, each of these sweeps is a statement per shard that
 * Citus plans with the shard's ~2,048 buckets: an idle worker spent some
 * 60 ms of CPU a second on them. There they run every 10 s. Nothing waits
 * on them: a token past expires_at is refused when consumed, and another
 * node's leases get 60 s past their expiry before anyone settles them.
 */
#define WORKER_SWEEP_MS		10000

extern void Housekeep(TimestampTz now, MemoryContext loop_cxt);
extern TimestampTz HousekeepingDueAt(void);

/*
 * HotPathPlanning turns the planner's sequential and bitmap scans off for
 * the dispatcher's own statements (hot) or back to the session's
 * defaults for housekeeping calls (see src/delivery/housekeeping.c).
 */
extern void HotPathPlanning(bool hot);

#endif
