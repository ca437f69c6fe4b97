/*-------------------------------------------------------------------------
 *
 * src/outbox/effects.h
 *	  Effects: parsing the effects argument and inserting effects into the
 *	  outbox. Shared by enqueue_effect (the automatic path, src/operations/enqueue.c),
 *	  request_approval and consume_approval (the human path).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EFFECTS_H
#define IDEMGATE_EFFECTS_H

#include "postgres.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "ledger/events.h"
#include "outbox/outbox.h"

/*
 * ParseEffects checks that effects is one effect object or a non-empty
 * array of them, each {"type": non-empty text, "target": non-empty text,
 * "payload": any JSON, "not_before": optional timestamptz}, with no other
 * fields, no reserved type (IDEMGATE_RESERVED_TYPE_PREFIX) and no (type,
 * target) twice, raising 22023 naming the problem (e.g. effects[2].target)
 * under argname; and splits it into its effects (*out, palloc'd, input
 * order; has_not_before set from the optional not_before field,
 * cancel_window false). Returns how many.
 */
extern int	ParseEffects(Jsonb *effects, const char *argname, ParsedEffect **out);

/*
 * InsertEffects validates effects and inserts each into idemgate.outbox for
 * run key; an effect whose (key, type, target) is already there is not
 * inserted again. Returns every effect id (existing ones too) in input
 * order as a uuid[], writes an effects_enqueued event (with details, when
 * given, in it: the state change of the enqueue) and asks for the
 * dispatcher to be woken at commit. The caller holds the run's row lock.
 * Must be called inside SPI; the array lives in the current context.
 */
extern ArrayType *InsertEffects(text *key, Jsonb *effects, bool automatic,
								const char *actor, EventDetails *details);

#endif
