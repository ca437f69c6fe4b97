/*-------------------------------------------------------------------------
 *
 * src/policy/endpoint_circuits.h
 *	  Endpoint health: a circuit per endpoint (idemgate.endpoint_circuits)
 *	  that opens after idemgate.circuit_failures retryable failures in a
 *	  row, holds the endpoint's effects, probes, and closes (SPEC §22).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_ENDPOINT_CIRCUITS_H
#define IDEMGATE_ENDPOINT_CIRCUITS_H

#include "postgres.h"
#include "utils/uuid.h"

/*
 * CircuitCountsFailure tells whether a failure of class cls says the
 * endpoint is down (transport, rate_limited, unavailable,
 * timeout_after_send, lost_after_send) rather than that it answered.
 */
extern bool CircuitCountsFailure(const char *cls);

/*
 * CircuitsRefresh reads idemgate.endpoint_circuits into this process's
 * view of which circuits are open; at most once a second unless force.
 * Must be called inside SPI.
 */
extern void CircuitsRefresh(bool force);

/* CircuitKnownOpen tells whether effect_type's circuit was open at the last refresh. */
extern bool CircuitKnownOpen(const char *effect_type);

/*
 * CircuitNextProbe names an open circuit whose probe is due and that no
 * live probe holds, after skip of them (0, 1, ...), or NULL; *probes is
 * how many probes it has made.
 */
extern const char *CircuitNextProbe(int skip, int *probes);

/*
 * CircuitOpenLongerThan names a circuit that had been open for longer than
 * secs at the last refresh, after skip of them, or NULL.
 */
extern const char *CircuitOpenLongerThan(int skip, int secs);

/*
 * CircuitTakeProbe makes owner the circuit's prober until until_secs from
 * now, if no one else took it meanwhile. Must be called inside SPI.
 */
extern bool CircuitTakeProbe(const char *effect_type, pg_uuid_t *owner, double until_secs);

/*
 * CircuitNoteAnswer: an effect of effect_type got an answer that is not a
 * circuit failure. The count of failures in a row starts again; a probe's
 * answer closes the circuit. Must be called inside SPI.
 */
extern void CircuitNoteAnswer(const char *effect_type, bool probe, pg_uuid_t *owner);

/*
 * CircuitNoteFailure: an effect of effect_type failed with a circuit
 * failure (cls, HTTP status or 0). The failure that makes
 * idemgate.circuit_failures in a row opens the circuit; a probe's failure
 * schedules the next probe. Returns true when the circuit is open: the
 * caller then never dead-letters the effect for this failure. Must be
 * called inside SPI.
 */
extern bool CircuitNoteFailure(const char *effect_type, const char *cls, int status,
							   bool probe, pg_uuid_t *owner);

/*
 * CircuitForget drops effect_type's circuit with its endpoint
 * (unregister_endpoint): a new endpoint starts closed. Inside SPI.
 */
extern void CircuitForget(const char *effect_type);

#endif
