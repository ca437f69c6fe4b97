/*-------------------------------------------------------------------------
 *
 * src/policy/pull_grants.h
 *	  The pull-API rule per effect type (src/policy/pull_grants.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_PULL_GRANTS_H
#define IDEMGATE_PULL_GRANTS_H

#include "postgres.h"
#include "utils/uuid.h"

/*
 * CheckPullAllowed raises 42501 unless the calling role may pull effects of
 * effect_type: operators always; others only types granted to them with
 * grant_effect_type that have no registered endpoint. Must be called
 * inside SPI.
 */
extern void CheckPullAllowed(const char *effect_type);

/* CheckPullAllowedForEffect does the same for the type of an effect (none if unknown). */
extern void CheckPullAllowedForEffect(pg_uuid_t *effect_id);

#endif
