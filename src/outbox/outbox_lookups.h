/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox_lookups.h
 *	  Reconciliation of unknown effects through their endpoint's status URL
 *	  (SPEC §22): the outbox statements of the dispatcher's look-ups.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_OUTBOX_LOOKUPS_H
#define IDEMGATE_OUTBOX_LOOKUPS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/uuid.h"

#include "outbox/outbox.h"

/*
 * Columns of a row ClaimUnknownForLookup gives take(): effect_id,
 * provider_id (NULL when none), status_url, timeout in ms, the endpoint's
 * header lines (as the claim's), effect_type, provider_id_field,
 * rate_limit, max_in_flight.
 */
#define LOOKUP_COL_EFFECT_ID 1
#define LOOKUP_COL_PROVIDER_ID 2
#define LOOKUP_COL_STATUS_URL 3
#define LOOKUP_COL_TIMEOUT_MS 4
#define LOOKUP_COL_HEADERS 5
#define LOOKUP_COL_EFFECT_TYPE 6
#define LOOKUP_COL_PROVIDER_ID_FIELD 7
#define LOOKUP_COL_RATE_LIMIT 8
#define LOOKUP_COL_MAX_IN_FLIGHT 9

/*
 * ClaimUnknownForLookup leases up to limit unknown effects whose endpoint
 * has a status URL and whose look-up is due (10 s after they became
 * unknown, then 10 s × 2^checks, at most an hour), of types not paused;
 * they stay unknown. Lease: the endpoint's timeout plus margin. Must be
 * called inside SPI, with the kill switch read on.
 */
extern uint64 ClaimUnknownForLookup(int limit, pg_uuid_t *owner, Interval *margin,
									ClaimedRowsReader take, void *arg);

/* What a look-up's answer did (RecordLookupAnswer). */
typedef enum LookupResult
{
	LOOKUP_IGNORED,				/* no longer ours: resolved or cancelled meanwhile */
	LOOKUP_DELIVERED,			/* 2xx: completed */
	LOOKUP_NOT_RECEIVED,		/* 404: pending, sent again with the same key */
	LOOKUP_STILL_UNKNOWN		/* anything else: asked again later */
} LookupResult;

/*
 * RecordLookupAnswer records the answer of a look-up leased by owner: HTTP
 * status (0: no answer), the provider id read from a 2xx answer. Writes
 * event effect_reconciled for a delivered or not-received answer; the run
 * completes with its last effect. Must be called inside SPI.
 */
extern LookupResult RecordLookupAnswer(pg_uuid_t *effect_id, pg_uuid_t *owner, int status,
									   const char *provider_id);

/* GiveBackLookup ends a look-up that was not sent: unknown as before, due as before. */
extern void GiveBackLookup(pg_uuid_t *effect_id, pg_uuid_t *owner);

#endif
