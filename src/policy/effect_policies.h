/*-------------------------------------------------------------------------
 *
 * src/policy/effect_policies.h
 *	  Policy per effect type (src/policy/effect_policies.c): the table
 *	  idemgate.effect_type_policies and the rules enqueue_effect and
 *	  request_approval apply from it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EFFECT_POLICIES_H
#define IDEMGATE_EFFECT_POLICIES_H

#include "postgres.h"
#include "datatype/timestamp.h"

#include "policy/effect_types.h"

/* The policy of one effect type. */
typedef struct EffectPolicy
{
	char	   *effect_type;
	bool		requires_approval;
	bool		requires_requester;
	double		review_sample;	/* 0..1 */
	Interval   *cancel_window;	/* NULL = none */
} EffectPolicy;

/* The policies of the effect types of one call (types without one left out). */
typedef struct EffectPolicies
{
	int			n;
	EffectPolicy *items;
} EffectPolicies;

/*
 * ReadEffectPolicies reads the policies of the types of parsed[0..n) into
 * *out, first taking a lock that a concurrent set_effect_policy waits for
 * (and that waits for it): a policy committed before this call is seen, a
 * policy set while this transaction is open takes effect after it. Reads
 * nothing (out->n = 0) on a schema older than 1.2. Must be called inside
 * SPI; the result lives in the current memory context.
 */
extern void ReadEffectPolicies(const ParsedEffect *parsed, int n, EffectPolicies *out);

/* FindEffectPolicy returns the policy of type (NUL-terminated), or NULL. */
extern const EffectPolicy *FindEffectPolicy(const EffectPolicies *policies, const char *type);

/*
 * RefuseTypesRequiringApproval raises 42501 naming the policy when one of
 * the types requires approval: enqueue_effect may not send it.
 */
extern void RefuseTypesRequiringApproval(const EffectPolicies *policies);

/*
 * DrawReview decides whether an enqueue_effect call is turned into an
 * approval request: one draw from OpenSSL's CSPRNG against the highest
 * review_sample of the call's types (1.0 always, 0 never). *sample gets
 * that fraction.
 */
extern bool DrawReview(const EffectPolicies *policies, double *sample);

/*
 * CountReviewRequested adds one to reviews_requested of every type of the
 * call whose policy samples (review_sample > 0). Must be called inside SPI.
 */
extern void CountReviewRequested(const EffectPolicies *policies);

/*
 * ApplyCancelWindows holds every effect whose type has a cancel_window:
 * not due before now() + the window (or its own later not_before), and
 * marked so that the outbox records the window's end (cancel_until).
 */
extern void ApplyCancelWindows(const EffectPolicies *policies, ParsedEffect *parsed, int n);

/*
 * CheckRequesterPolicy raises 22004 when a type of the call requires a
 * requester (requires_requester) and requested_by is NULL or the audience
 * is NULL or empty (audience_count < 1). Must be called inside SPI.
 */
extern void CheckRequesterPolicy(const ParsedEffect *parsed, int n, const char *requested_by,
								 int audience_count);

#endif
