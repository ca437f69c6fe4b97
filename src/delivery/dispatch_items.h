/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatch_items.h
 *	  What a dispatcher holds in its process memory: the effects it claimed
 *	  (one Claimed each, from its claim to its recorded outcome) and where
 *	  each stands — started, waiting for its endpoint's limits, in flight
 *	  in libcurl, finished and waiting to be recorded. The files of
 *	  src/delivery/ share it; src/delivery/dispatcher.c owns it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCH_ITEMS_H
#define IDEMGATE_DISPATCH_ITEMS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/uuid.h"

#include "core/dispatcher_shmem.h"
#include "delivery/http.h"

/* Lease = endpoint timeout + this, to cover recording the outcome. */
#define LEASE_MARGIN_SECS	10

/* A batch of claimed effects; its memory goes when its last effect is recorded. */
typedef struct ClaimBatch
{
	MemoryContext cxt;
	int			remaining;
	pg_uuid_t	owner;
} ClaimBatch;

/* How a claimed effect ends in this process. */
typedef enum ItemFate
{
	FATE_SENT,					/* the HTTP result decides */
	FATE_RELEASE,				/* never sent: back to pending, attempt uncounted */
	FATE_HOLD,					/* never sent, its secret missing: the same, later */
	FATE_DENIED					/* URL no longer allowed: rejected */
} ItemFate;

/* One claimed effect. */
typedef struct Claimed
{
	HttpRequest req;			/* must stay first: HttpPoll returns &req */
	ClaimBatch *batch;
	pg_uuid_t	effect_id;
	int			attempt;
	bool		honors_key;
	char	   *provider_id_field;
	ItemFate	fate;
	const char *denied_why;
	char	   *secret_missing;	/* a secret its headers name that is missing (FATE_HOLD) */
	bool		probe;			/* its endpoint's circuit is open: this is the probe */
	bool		lookup;			/* a status look-up (GET) of an unknown effect */
	int			record_failures;
	double		rate_limit;		/* endpoint's requests/s; 0 = none */
	int			endpoint_max;	/* endpoint's max_in_flight; 0 = none */
	bool		limit_counted;	/* counted in flight by src/policy/rate_limit.c */
	TimestampTz waiting_since;	/* when it began waiting for its limits */
	struct Claimed *next;			/* in the list of items to record */
} Claimed;

/* The dispatcher's items across its loop. */
typedef struct DispatchItems
{
	DispatcherSlot *shared;		/* this dispatcher's slot: its counters */
	Claimed   **started;		/* claimed in the last round, not yet started */
	int			n_started;
	Claimed   **waiting;		/* waiting for their endpoint's limits, in claim order */
	int			n_waiting;
	Claimed    *to_record;		/* finished, outcome not yet recorded */
	int			n_to_record;
	TimestampTz oldest_to_record_at;	/* when the list became non-empty */
	bool		solo_recording;	/* record one by one after this round */
	ClaimBatch *claiming;		/* batch being filled by a claim */
	int			node_group;		/* Citus group (0: the coordinator), -1 on a single node */
} DispatchItems;

extern DispatchItems dispatch;

#endif
