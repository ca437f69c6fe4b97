/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox_dispatch.h
 *	  The outbox statements of the dispatcher (part of the outbox module).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_OUTBOX_DISPATCH_H
#define IDEMGATE_OUTBOX_DISPATCH_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/uuid.h"

#include "outbox/outbox.h"

/*
 * ClaimDueForDispatch marks up to limit due pending effects of approved
 * runs, of types with an endpoint and not paused, sending under owner for
 * the endpoint's timeout + margin. Each statement's rows are handed to
 * take(arg) while in SPI_tuptable (once on a single node, once per shard
 * that gave effects on Citus): effect_id, attempts, url, timeout (ms),
 * honors_idempotency_key, provider_id_field, headers (text[] "Name:
 * value"), body (text), effect type, rate_limit, max_in_flight. Returns
 * how many were marked. Must be called inside SPI.
 */
/*
 * LeaseClaimValues fills the parameters every leasing claim statement
 * takes: $1 the most rows, $2 the lease owner, $3 the margin added to the
 * endpoint's timeout, $4 now as seconds since the epoch.
 */
extern void LeaseClaimValues(Datum *values, int limit, pg_uuid_t *owner, Interval *margin);

/*
 * ClaimLocally runs stmt, a claim that returns the rows it leased (an
 * UPDATE ... RETURNING), raising failure when it fails, and hands the
 * rows to take; it returns how many there were.
 */
extern uint64 ClaimLocally(struct SavedStatement *stmt, Datum *values, ClaimedRowsReader take,
						   void *arg, const char *failure);

extern uint64 ClaimDueForDispatch(int limit, pg_uuid_t *owner, Interval *margin,
								  ClaimedRowsReader take, void *arg);

/*
 * ClaimOfTypeForDispatch is ClaimDueForDispatch for effect_type alone,
 * whatever its circuit, and only due effects made at least min_age_secs ago:
 * a circuit's probe and the effects held behind it too long.
 */
extern uint64 ClaimOfTypeForDispatch(const char *effect_type, double min_age_secs, int limit,
									 pg_uuid_t *owner, Interval *margin,
									 ClaimedRowsReader take, void *arg);

/*
 * GiveBackEffect: a claimed, unsent effect goes back to pending, attempt
 * uncounted; with hold_secs > 0 not due again for that long (a secret is
 * missing), else due as before.
 */
extern void GiveBackEffect(pg_uuid_t *effect_id, pg_uuid_t *owner, double hold_secs);

/*
 * ExpireGoneDispatchersLeases marks expired the live leases held by
 * dispatchers of another life than life (4 bytes), or by an earlier
 * incarnation than incarnation of slot; returns how many.
 */
extern uint64 ExpireGoneDispatchersLeases(bytea *life, int slot, int incarnation);

#endif
