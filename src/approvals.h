/*-------------------------------------------------------------------------
 *
 * src/approvals.h
 *	  The approval gate: single-use hashed tokens, consumed together with
 *	  the run transition and the outbox insert.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_APPROVALS_H
#define IDEMGATE_APPROVALS_H

#include "postgres.h"
#include "utils/uuid.h"

/* Bytes of CSPRNG material in a token (256 bits; 43 base64url characters). */
#define IDEMGATE_TOKEN_BYTES 32

/*
 * ExpireApprovals fails every run still waiting on an approval past its
 * expiry (failed_terminal, dead letter, approval_expired event) and returns
 * how many. Skips rows another transaction holds, so it never waits for a
 * concurrent consume_approval. Must be called inside SPI.
 */
extern int	ExpireApprovals(void);

/* cancel_approval (src/cancel.c); inside SPI. */
extern bool LockApproval(pg_uuid_t *approval_id, text **key, int64 *run_version, bool *open);
extern void CancelLockedApproval(pg_uuid_t *approval_id, const char *actor);

#endif
