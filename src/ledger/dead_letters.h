/*-------------------------------------------------------------------------
 *
 * src/ledger/dead_letters.h
 *	  The dead_letters table: every statement that writes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DEAD_LETTERS_H
#define IDEMGATE_DEAD_LETTERS_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

/* A dead letter as reinjection needs it (LockDeadLetter). */
typedef struct DeadLetterRef
{
	char	   *kind;			/* "run" or "effect" */
	text	   *key;
	pg_uuid_t  *effect_id;		/* NULL for run letters */
	bool		reinjected;
	char	   *error_class;	/* NULL when none was recorded */
} DeadLetterRef;

/* All must be called inside SPI. */
extern int64 RecordDeadLetter(const char *kind, text *key, pg_uuid_t *effect_id,
							  const char *effect_type, Jsonb *payload,
							  const char *error_class, const char *error,
							  int attempts);
extern void SetDeadLetterTarget(int64 id, const char *target);
extern bool LockDeadLetter(int64 id, DeadLetterRef *letter);
extern void MarkDeadLetterReinjected(int64 id, const char *actor);
extern int64 *LockOpenDeadLetters(text *effect_type, Datum since, bool since_null, int *n);

#endif
