/*-------------------------------------------------------------------------
 *
 * src/delivery/claiming.h
 *	  What a dispatcher claims in its round (src/delivery/claiming.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_CLAIMING_H
#define IDEMGATE_CLAIMING_H

#include "postgres.h"

/* ClaimEffects claims up to limit due effects and probes into dispatch.started. */
extern void ClaimEffects(int limit);
/* ClaimLookups leases up to limit unknown effects for a status look-up. */
extern void ClaimLookups(int limit);
/* DeadLetterHeldTooLong dead-letters effects held longer than circuit_max_hold. */
extern void DeadLetterHeldTooLong(void);

#endif
