/*-------------------------------------------------------------------------
 *
 * src/ledger/events.h
 *	  The audit trail (idemgate.events).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EVENTS_H
#define IDEMGATE_EVENTS_H

#include "postgres.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

/* A JSON object under construction for an event's details. */
typedef struct EventDetails
{
	StringInfoData buf;
	bool		empty;
} EventDetails;

extern void DetailsInit(EventDetails *d);
extern void DetailsText(EventDetails *d, const char *key, const char *value);
extern void DetailsInt(EventDetails *d, const char *key, int64 value);
extern void DetailsBool(EventDetails *d, const char *key, bool value);
extern void DetailsJsonb(EventDetails *d, const char *key, Jsonb *value);
extern Jsonb *DetailsFinish(EventDetails *d);

extern void RecordEvent(text *key, pg_uuid_t *effect_id, const char *kind,
						const char *actor, Jsonb *details);
extern void RecordTypeEvent(const char *kind, const char *actor, const char *effect_type,
							const char *role_key, EventDetails *details);
extern void RecordDuplicateEvent(text *key, const char *actor, Datum workflow,
								 bool workflow_null, Datum state, int64 version,
								 text *origin);

#endif
