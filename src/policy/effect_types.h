/*-------------------------------------------------------------------------
 *
 * src/policy/effect_types.h
 *	  Effect types: the ones that are idemgate's own, an effect as a caller
 *	  asks for it, pausing a type.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EFFECT_TYPES_H
#define IDEMGATE_EFFECT_TYPES_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/*
 * Effect types beginning with this are idemgate's own: no caller may
 * enqueue, request or register them (re-runs, src/operations/rerun.c, are
 * IDEMGATE_RERUN_TYPE_PREFIX followed by the workflow's name).
 */
#define IDEMGATE_RESERVED_TYPE_PREFIX	"idemgate."
#define IDEMGATE_RERUN_TYPE_PREFIX		"idemgate.rerun:"

/* IsReservedEffectType tells whether type begins with the reserved prefix. */
extern bool IsReservedEffectType(const char *type);

/*
 * EffectTypePaused is true while effect_type has a row in
 * idemgate.paused_effect_types (read with the current snapshot). Must be
 * called inside SPI.
 */
extern bool EffectTypePaused(const char *effect_type);

/*
 * One effect as a caller's effects argument gives it (src/outbox/effects.c
 * parses it; the policies check it before the outbox stores it).
 */
typedef struct ParsedEffect
{
	char	   *type;
	int			type_len;
	char	   *target;
	int			target_len;
	Jsonb	   *payload;
	bool		has_not_before;
	TimestampTz not_before;		/* not due before then (delayed delivery) */
	bool		cancel_window;	/* not_before ends a cancel window (cancel_until) */
} ParsedEffect;

#endif
