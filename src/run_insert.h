/*-------------------------------------------------------------------------
 *
 * src/run_insert.h
 *	  The new-key path of claim: a run row inserted without SPI.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RUN_INSERT_H
#define IDEMGATE_RUN_INSERT_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

/* A run to insert: the arguments of the claim statement. */
typedef struct NewRun
{
	text	   *key;
	text	   *workflow;		/* NULL when none */
	bytea	   *payload_hash;
	Jsonb	   *payload;
	pg_uuid_t  *owner;
	Interval   *lease;
	text	   *replaces_key;	/* NULL when none */
} NewRun;

extern bool InsertNewRun(const NewRun *run);

#endif
