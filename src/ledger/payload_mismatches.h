/*-------------------------------------------------------------------------
 *
 * src/ledger/payload_mismatches.h
 *	  Payload mismatches (IG001) counted per workflow in shared memory, so
 *	  that the count survives the rollback of the claim that raised it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_PAYLOAD_MISMATCHES_H
#define IDEMGATE_PAYLOAD_MISMATCHES_H

#include "postgres.h"

/* From _PG_init: defines the segment (src/core/shmem_segment.c). */
extern void PayloadMismatchShmemDefine(void);

/*
 * CountPayloadMismatch counts one mismatch of key in workflow (NULL: runs
 * without a workflow) in this database. Does nothing without the preload.
 * Never raises: it is called on the way to raising IG001.
 */
extern void CountPayloadMismatch(const char *workflow, int workflow_len,
								 const char *key, int key_len);

#endif
