/*-------------------------------------------------------------------------
 *
 * src/runs.h
 *	  The run ledger: states, transitions and ownership checks shared with
 *	  approvals and the outbox.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RUNS_H
#define IDEMGATE_RUNS_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "events.h"

/* What LockOwnedRun found. */
typedef struct OwnedRun
{
	bool		found;			/* the key exists */
	bool		owned;			/* owner, version match and the lease is live */
	char		state[32];
	int64		version;
	int32		failures;
	Jsonb	   *payload;		/* in the SPI context; NULL when none */
	char	   *workflow;		/* in the SPI context; NULL when none */
} OwnedRun;

extern bool IsRunState(const char *state);
extern void LockOwnedRun(text *key, pg_uuid_t *owner, int64 version, OwnedRun *run);
extern int64 MoveRunState(text *key, const char *from_state, const char *to_state,
						  Jsonb *result, bool count_failure, EventDetails *details);
extern int64 TryMoveRun(text *key, pg_uuid_t *owner, int64 version,
						const char *from_state, const char *to_state,
						Jsonb *result, EventDetails *details);
extern int64 SetRunState(text *key, const char *from_state, const char *to_state,
						 Jsonb *result, bool count_failure, const char *actor,
						 Jsonb *extra_details);

#endif
