/*-------------------------------------------------------------------------
 *
 * src/idemgate.h
 *	  Shared declarations for the idemgate extension: our own SQLSTATEs
 *	  (and, through idemgate_limits.h, every limit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_H
#define IDEMGATE_H

#include "postgres.h"
#include "idemgate_limits.h"

/* Same idempotency key arrived with a different payload. */
#define ERRCODE_IDEMGATE_PAYLOAD_MISMATCH	MAKE_SQLSTATE('I','G','0','0','1')
/* Illegal state transition. */
#define ERRCODE_IDEMGATE_ILLEGAL_TRANSITION	MAKE_SQLSTATE('I','G','0','0','2')
/* Unknown key, effect or dead letter where one is required. */
#define ERRCODE_IDEMGATE_UNKNOWN_OBJECT		MAKE_SQLSTATE('I','G','0','0','3')

#endif							/* IDEMGATE_H */
