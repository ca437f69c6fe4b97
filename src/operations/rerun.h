/*-------------------------------------------------------------------------
 *
 * src/operations/rerun.h
 *	  Re-running a workflow from a run's stored input (src/operations/rerun.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RERUN_H
#define IDEMGATE_RERUN_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "ledger/events.h"

/*
 * RequestRerun puts the re-post of a run's stored input (payload) in the
 * outbox when its workflow has a re-run endpoint (register_rerun), for
 * dead letter dead_letter_id of run key, which the caller just moved back
 * to failed_retryable holding its row lock. Adds what it did to details
 * (rerun_key, rerun_effect_id) and returns true; false, changing nothing,
 * when the run has no workflow, no stored input or no re-run endpoint.
 * Must be called inside SPI.
 */
extern bool RequestRerun(int64 dead_letter_id, text *key, const char *workflow,
						 Jsonb *payload, const char *actor, EventDetails *details);

#endif
