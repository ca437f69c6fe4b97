/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox.h
 *	  The outbox table: every write to it goes through these functions
 *	  (and src/outbox/outbox_dispatch.h for the dispatcher's claim). The pull API
 *	  and the dispatcher record outcomes through the same calls, so both
 *	  record them exactly the same way.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_OUTBOX_H
#define IDEMGATE_OUTBOX_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "policy/effect_types.h"	/* the reserved types */
#include "ledger/events.h"

/* Byte 7 of a dispatcher's lease owner (src/delivery/dispatcher_leases.c). */
#define DISPATCHER_LEASE_MARKER 209	/* 0xD1 */


/* One effect as an operator command sees it (LockEffect). */
typedef struct LockedEffect
{
	char	   *state;
	text	   *key;
	char	   *effect_type;
	char	   *run_state;		/* NULL if its run is gone */
} LockedEffect;

/*
 * InsertOutboxEffects inserts n effects for run key; an effect whose (key,
 * type, target) is already there is not inserted again. An effect with
 * cancel_window set gets cancel_until = its due time (not_before, or now):
 * an approver may cancel it until then (cancel_in_window). Returns every
 * effect id (existing ones too) in input order as a uuid[], writes an
 * effects_enqueued event (with details, when given, in it: the state
 * change of the enqueue) and asks for the dispatcher to be woken at
 * commit. The caller holds the run's row lock. Must be called inside SPI.
 */
extern ArrayType *InsertOutboxEffects(text *key, const ParsedEffect *parsed, int n,
									  bool automatic, const char *actor,
									  EventDetails *details);

/*
 * ExistingEffectIds returns the ids (input order) of the effects of run key
 * when every (type, target) given is already in the outbox, else NULL.
 * Changes nothing: this is how a retried enqueue on an approved run is
 * answered. Must be called inside SPI.
 */
extern ArrayType *ExistingEffectIds(text *key, const ParsedEffect *parsed, int n);

/*
 * ClaimEffectsOfType marks up to batch due pending effects of effect_type
 * (of approved runs) sending under owner for lease, and calls take(arg)
 * after each statement to read its rows (SPI_tuptable: effect_id,
 * idempotency_key, effect_type, target, payload, attempts, lease_owner).
 * On Citus it visits the shards in turn until batch is reached. Must be
 * called inside SPI.
 */
typedef void (*ClaimedRowsReader) (void *arg);
extern void ClaimEffectsOfType(const char *effect_type, int batch, pg_uuid_t *owner,
							   Interval *lease, ClaimedRowsReader take, void *arg);

/*
 * ClaimShardByShard is a claim on Citus, one shard at a time (both the
 * pull API's and the dispatcher's): for each shard of the set which
 * (ShardBucketSets), starting at *next_shard, statement due selects the
 * ids of due effects (values, with values[limit_arg] the number still
 * wanted), then statement mark takes them (values, then the ids as its
 * last parameter, a uuid[]) and take(arg) reads its rows; until limit
 * effects are taken or every shard was tried. *next_shard moves past the
 * last shard that gave effects, so none is starved. Returns how many were
 * taken. Must be called inside SPI.
 */
struct SavedStatement;
typedef struct ShardClaim
{
	struct SavedStatement *due;
	struct SavedStatement *mark;
	int			limit_arg;
	int			which;			/* SHARDS_LOCAL or SHARDS_SCAN */
	int		   *next_shard;
	int			work;			/* ShardWork of its rows; 0: due effects */
} ShardClaim;
extern uint64 ClaimShardByShard(const ShardClaim *claim, Datum *values, int limit,
								ClaimedRowsReader take, void *arg);

/* IsErrorClass tells whether name is an error class callers may use. */
extern bool IsErrorClass(const char *name);

#define ERROR_CLASS_HINT \
	"The error classes are transport, rate_limited, unavailable, timeout_after_send, " \
	"server_error and rejected."

/*
 * CompleteEffect marks a sending effect completed if owner still holds its
 * lease, stores provider_id (may be NULL) and http_status (0 = none), and
 * completes the run when this was its last open effect. Returns false when
 * the lease was lost. Must be called inside SPI.
 */
extern bool CompleteEffect(pg_uuid_t *effect_id, pg_uuid_t *owner,
						   const char *provider_id, int http_status);

/*
 * CompleteEffects is CompleteEffect for n effects at once, in two statements
 * whatever n is (the effects, their events and a lock on their approved runs;
 * then the runs with no open effect left). completed[i] tells whether effect i
 * was still held by owners[i] and is now completed. Returns how many were.
 * Must be called inside SPI.
 */
extern int	CompleteEffects(int n, const pg_uuid_t *effect_ids, const pg_uuid_t *owners,
							char *const *provider_ids, const int *http_statuses,
							bool *completed);

/*
 * FailEffect records a failed attempt of a sending effect held by owner.
 * error_class is one of transport, rate_limited, unavailable,
 * timeout_after_send, server_error, rejected. retry_after_usecs < 0 means
 * none; a retry waits at least that long, and one longer than
 * RetryAfterLimitUsecs (src/core/backoff.h) fails the effect instead. Returns
 * the effect's new state (pending, unknown or failed), or NULL when the lease
 * was lost. Must be called inside SPI.
 */
extern const char *FailEffect(pg_uuid_t *effect_id, pg_uuid_t *owner,
							  const char *error_class, const char *error,
							  int64 retry_after_usecs, int http_status);

/*
 * FailEffectWith is FailEffect with flags: FAIL_HOLD_LAST, the endpoint's
 * circuit is open (src/policy/endpoint_circuits.c): a retryable failure of the
 * last attempt keeps the effect pending, to go out again once the circuit
 * closes, instead of dead-lettering it; FAIL_NOW, dead-letter it whatever
 * attempts are left (held too long behind a circuit).
 */
#define FAIL_HOLD_LAST	0x01
#define FAIL_NOW		0x02
extern const char *FailEffectWith(pg_uuid_t *effect_id, pg_uuid_t *owner,
								  const char *error_class, const char *error,
								  int64 retry_after_usecs, int http_status, int flags);

/*
 * SettleExpiredLeases settles sending effects whose lease expired (a crashed
 * worker): unknown, or pending with backoff when the endpoint honours the
 * Idempotency-Key. Only effects of effect_type unless it is NULL. Returns
 * how many were settled. Must be called inside SPI.
 */
extern int	SettleExpiredLeases(const char *effect_type);

/*
 * Operator commands (cancel_effect, reinject, resolve_effect): LockEffect
 * locks effect_id's row (FOR UPDATE) and describes it; false when it does
 * not exist. The others change an effect the caller locked and checked:
 * to cancelled; back to pending, attempts 0, due now (and wake the
 * dispatchers at commit); to completed with provider_id (NULL keeps it).
 * All must be called inside SPI.
 */
extern bool LockEffect(pg_uuid_t *effect_id, LockedEffect *effect);
/*
 * ReplaceLockedEffect turns a locked failed effect into its replacement
 * (reinject with a corrected payload): a new effect id, so a new
 * Idempotency-Key, replaces = the old id, payload, pending and due now.
 * Returns the new id.
 */
extern pg_uuid_t *ReplaceLockedEffect(pg_uuid_t *effect_id, text *key, Jsonb *payload);
/* RunHasOpenEffects: an effect of key is pending, sending or unknown. */
extern bool RunHasOpenEffects(text *key);

/*
 * LockEffectWindow is LockEffect for cancel_in_window: it also tells the
 * effect's cancel window (*cancel_until, false when it has none) and
 * whether it is still open (before cancel_until). Must be called inside
 * SPI, on the 1.2 schema.
 */
extern bool LockEffectWindow(pg_uuid_t *effect_id, LockedEffect *effect,
							 bool *has_window, bool *window_open, TimestampTz *cancel_until);
extern void CancelLockedEffect(pg_uuid_t *effect_id);
extern void RequeueLockedEffect(pg_uuid_t *effect_id);
extern void ResolveLockedEffectDelivered(pg_uuid_t *effect_id, const char *provider_id);

#endif
