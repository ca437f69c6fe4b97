/*-------------------------------------------------------------------------
 *
 * src/approvals/approvals.h
 *	  The approval gate: single-use hashed tokens, consumed together with
 *	  the run transition and the outbox insert.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_APPROVALS_H
#define IDEMGATE_APPROVALS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "ledger/events.h"

/* Bytes of CSPRNG material in a token (256 bits; 43 base64url characters). */
#define IDEMGATE_TOKEN_BYTES 32

/* What InsertApproval made: the token is returned once and never stored. */
typedef struct NewApproval
{
	pg_uuid_t  *approval_id;
	char	   *token;			/* 43 base64url characters */
	Datum		expires_at;		/* timestamptz */
} NewApproval;

/*
 * InsertApproval stores a new approval of run key, which the caller moved
 * to awaiting_human at run_version holding its row lock: a fresh token
 * (only its SHA-256 stored), the effects to enqueue if approved, the card
 * (with the key and expiry set), audience (NULL = any approver; its JSON
 * text for the event) and requested_by. Writes the approval_requested
 * event with details (the caller's state change in it). Must be called
 * inside SPI.
 */
extern void InsertApproval(text *key, int64 run_version, Jsonb *effects, int effect_count,
						   Interval *expires_in, Jsonb *card, ArrayType *audience,
						   const char *audience_json, const char *requested_by,
						   EventDetails *details, NewApproval *out);

/*
 * ExpireApprovals fails every run still waiting on an approval past its
 * expiry (failed_terminal, dead letter, approval_expired event) and returns
 * how many. Skips rows another transaction holds, so it never waits for a
 * concurrent consume_approval. Must be called inside SPI.
 */
extern int	ExpireApprovals(void);

/* cancel_approval (src/operations/cancel.c); inside SPI. */
extern bool LockApproval(pg_uuid_t *approval_id, text **key, int64 *run_version, bool *open);
extern void CancelLockedApproval(pg_uuid_t *approval_id, const char *actor);

/*
 * DecisionResult: the result a decision that ends its run leaves on it,
 * {"decision": decision, by_key: by, "reason": reason}.
 */
extern Jsonb *DecisionResult(const char *decision, const char *by_key, const char *by,
							 const char *reason);

#endif
