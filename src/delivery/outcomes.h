/*-------------------------------------------------------------------------
 *
 * src/delivery/outcomes.h
 *	  Recording what became of a dispatcher's items (src/delivery/outcomes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_OUTCOMES_H
#define IDEMGATE_OUTCOMES_H

#include "postgres.h"
#include "utils/uuid.h"

#include "delivery/dispatch_items.h"

/* UuidText formats a uuid (for headers and messages). */
extern char *UuidText(pg_uuid_t *u);
/* QueueForRecording adds a finished item to dispatch.to_record. */
extern void QueueForRecording(Claimed *it);
/* RecordQueued records every queued outcome in the current transaction. */
extern void RecordQueued(void);
/* FinishQueued frees the queued items after their transaction committed. */
extern void FinishQueued(void);
/* RecordAlone records each queued outcome in a transaction of its own. */
extern void RecordAlone(MemoryContext loop_cxt);

#endif
