/*-------------------------------------------------------------------------
 *
 * src/core/sqlstates.h
 *	  idemgate's own SQLSTATEs (class IG).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SQLSTATES_H
#define IDEMGATE_SQLSTATES_H

#include "postgres.h"

/* Same idempotency key arrived with a different payload. */
#define ERRCODE_IDEMGATE_PAYLOAD_MISMATCH	MAKE_SQLSTATE('I','G','0','0','1')
/* Illegal state transition. */
#define ERRCODE_IDEMGATE_ILLEGAL_TRANSITION	MAKE_SQLSTATE('I','G','0','0','2')
/* Unknown key, effect or dead letter where one is required. */
#define ERRCODE_IDEMGATE_UNKNOWN_OBJECT		MAKE_SQLSTATE('I','G','0','0','3')
/* The run's latest model output failed validation (record_validation). */
#define ERRCODE_IDEMGATE_INVALID_OUTPUT		MAKE_SQLSTATE('I','G','0','0','4')

#endif							/* IDEMGATE_H */
