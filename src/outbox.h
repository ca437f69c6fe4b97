/*-------------------------------------------------------------------------
 *
 * src/outbox.h
 *	  Recording the outcome of an effect delivery. Shared by the pull API
 *	  (complete_effect, fail_effect) and the dispatcher, so both record
 *	  outcomes exactly the same way.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_OUTBOX_H
#define IDEMGATE_OUTBOX_H

#include "postgres.h"
#include "utils/uuid.h"

/*
 * CompleteEffect marks a sending effect completed if owner still holds its
 * lease, stores provider_id (may be NULL) and http_status (0 = none), and
 * completes the run when this was its last open effect. Returns false when
 * the lease was lost. Must be called inside SPI.
 */
extern bool CompleteEffect(pg_uuid_t *effect_id, pg_uuid_t *owner,
						   const char *provider_id, int http_status);

/*
 * CompleteEffects is CompleteEffect for n effects at once, in two
 * statements whatever n is (the effects, their events and a lock on their
 * approved runs; then the runs with no open effect left). completed[i] tells whether effect i was still
 * held by owners[i] and is now completed. Returns how many were. Must be
 * called inside SPI.
 */
extern int	CompleteEffects(int n, const pg_uuid_t *effect_ids, const pg_uuid_t *owners,
							char *const *provider_ids, const int *http_statuses,
							bool *completed);

/*
 * FailEffect records a failed attempt of a sending effect held by owner.
 * error_class is one of transport, rate_limited, unavailable,
 * timeout_after_send, server_error, rejected. retry_after_usecs < 0 means
 * none. Returns the effect's new state (pending, unknown or failed), or NULL
 * when the lease was lost. Must be called inside SPI.
 */
extern const char *FailEffect(pg_uuid_t *effect_id, pg_uuid_t *owner,
							  const char *error_class, const char *error,
							  int64 retry_after_usecs, int http_status);

/*
 * SettleExpiredLeases settles sending effects whose lease expired (a crashed
 * worker): unknown, or pending with backoff when the endpoint honours the
 * Idempotency-Key. Only effects of effect_type unless it is NULL. Returns
 * how many were settled. Must be called inside SPI.
 */
extern int	SettleExpiredLeases(const char *effect_type);

/*
 * CompleteRunIfDone moves the run of key approved → completed when every
 * effect of it is completed. Must be called inside SPI, after the effect
 * row was changed.
 */
extern void CompleteRunIfDone(text *key);

#endif
