/*-------------------------------------------------------------------------
 *
 * src/ledger/claim_direct.h
 *	  The hot paths of claim without an SPI statement.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_CLAIM_DIRECT_H
#define IDEMGATE_CLAIM_DIRECT_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "ledger/tombstones.h"

/* A run to claim: the arguments of the claim statement. */
typedef struct NewRun
{
	text	   *key;
	text	   *workflow;		/* NULL when none */
	bytea	   *payload_hash;
	Jsonb	   *payload;
	pg_uuid_t  *owner;
	Interval   *lease;
	text	   *replaces_key;	/* NULL when none */
	text	   *origin;			/* NULL when none */
} NewRun;

/* A run that exists and cannot be taken over (locked FOR NO KEY UPDATE). */
typedef struct ExistingRun
{
	bool		same_payload;	/* false: IG001 */
	Datum		state;			/* text */
	int64		version;
	Datum		result;			/* jsonb, detoasted */
	bool		result_null;
	Datum		workflow;		/* text, detoasted */
	bool		workflow_null;
	Tombstone	tombstone;		/* CLAIM_TOMBSTONED */
} ExistingRun;

typedef enum ClaimPath
{
	CLAIM_INSERTED,				/* a new run, version 0 */
	CLAIM_EXISTS,				/* see ExistingRun */
	CLAIM_TOMBSTONED,			/* no run, a tombstone: ExistingRun.tombstone */
	CLAIM_USE_STATEMENT			/* nothing written: run the claim statement */
} ClaimPath;

extern ClaimPath ClaimDirect(const NewRun *run, ExistingRun *existing);
extern bool RecordDuplicate(text *key, const char *actor, Datum workflow,
							bool workflow_null, Datum state, int64 version,
							text *origin);

#endif
