/*-------------------------------------------------------------------------
 *
 * src/ledger/runs.h
 *	  The run ledger: states, transitions and ownership checks shared with
 *	  approvals and the outbox.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RUNS_H
#define IDEMGATE_RUNS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "ledger/events.h"

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
	bool		output_invalid; /* its latest validation failed (1.3) */
} OwnedRun;

extern bool IsRunState(const char *state);
/* AddStateChange adds from, to, version and the result's model identity to details. */
extern void AddStateChange(EventDetails *details, const char *from_state,
						   const char *to_state, int64 version, Jsonb *result);
extern bool RunValidationTracked(void);
extern int32 RecordValidationVerdict(text *key, bool valid, int32 *invalid_outputs);
extern void LockOwnedRun(text *key, pg_uuid_t *owner, int64 version, OwnedRun *run);
extern int64 MoveRunState(text *key, const char *from_state, const char *to_state,
						  Jsonb *result, bool count_failure, EventDetails *details);
extern int64 TryMoveRun(text *key, pg_uuid_t *owner, int64 version,
						const char *from_state, const char *to_state,
						Jsonb *result, EventDetails *details);
extern int64 MoveOwnedProcessingRun(text *key, pg_uuid_t *owner, int64 version,
									const char *to_state, EventDetails *details,
									OwnedRun *run);
extern int64 SetRunState(text *key, const char *from_state, const char *to_state,
						 Jsonb *result, bool count_failure, const char *actor,
						 Jsonb *extra_details);

/*
 * Run completion by its effects. CompleteRunIfDone moves the run of key
 * approved → completed when none of its effects is in another state than
 * completed or cancelled; a run without a result of its own (NULL, or an
 * earlier attempt's failure record) gets {"effects": [{effect_id,
 * effect_type, target, state, provider_id}, ...]}, so a later duplicate
 * has an answer. It locks the run row, so it must be called after the
 * effect row was changed (effect first, then run). CompleteLockedRuns does
 * the same for runs of keys (a text[] datum) this transaction already
 * locked while they were approved. CompleteSettledRuns, the safety net,
 * completes approved runs whose effects are all settled however they got
 * there (limit approved runs per call from where the last call stopped,
 * or all for 0). All must be called inside SPI.
 */
extern void CompleteRunIfDone(text *key);
extern int	CompleteLockedRuns(Datum keys);
/*
 * CompleteLockedRunsOnShard is CompleteLockedRuns for keys that all lie on
 * this node's shard of bucket (a Citus worker's dispatcher, a batch of
 * effects of one shard): one statement on the shard's tables when it is
 * placed here, else one key at a time through Citus.
 */
extern int	CompleteLockedRunsOnShard(Datum keys, int bucket);
extern int	CompleteSettledRuns(int limit);

/* Operator commands and record_validation; inside SPI. */
extern void ResetRunFailures(text *key);
extern int32 CountValidation(text *key);

/*
 * InsertApprovedRun inserts run key approved at version 0, without lease,
 * workflow or payload (a re-run's carrier, src/operations/rerun.c); false when key
 * exists. Inside SPI.
 */
extern bool InsertApprovedRun(text *key, bytea *payload_hash);

/* The outcome of a claim, as returned to SQL. */
typedef struct ClaimResult
{
	const char *outcome;
	Datum		values[7];		/* claim's columns; claim_in_bucket's 7th */
	bool		nulls[7];
	bool		mismatch_is_outcome;	/* claim_in_bucket: see ClaimExisting */
} ClaimResult;

/*
 * ClaimRun claims key (the claim statement, or its existing run's answer:
 * duplicate, recovered, payload mismatch, purged) into *out; ClaimInBucket
 * the same as a whole transaction on the key's node (Citus). Must be
 * called inside SPI.
 */
extern void ClaimRun(text *key, Jsonb *payload, Interval *lease, text *workflow,
					 pg_uuid_t *owner, text *replaces_key, const char *actor,
					 text *origin, ClaimResult *out);
extern void ClaimInBucket(text *key, Jsonb *payload, Interval *lease, text *workflow,
						  pg_uuid_t *owner, text *origin, ClaimResult *out);
/* LeaseArg reads a lease interval argument: positive, within max_lease_life. */
extern Interval *LeaseArg(FunctionCallInfo fcinfo, int argno, const char *name);
/* EmitClaimResult puts a claim outcome into the function's result set. */
extern void EmitClaimResult(FunctionCallInfo fcinfo, ClaimResult *res);

/* CasAllowed tells whether cas_transition may move a run from one state to another. */
extern bool CasAllowed(const char *from, const char *to);
/* ReportIllegalTransition raises IG002 for a transition the table refuses. */
extern void ReportIllegalTransition(const char *key, const char *from, const char *to);
extern TimestampTz RenewRunLease(text *key, Datum owner, Datum version, Interval *extend_by,
								 bool *renewed);
extern bool LockRunToSupersede(text *key, char **state, text **workflow);
extern char *RunSuccessor(text *key);

#endif
