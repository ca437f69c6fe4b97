/*-------------------------------------------------------------------------
 *
 * src/deadletters.h
 *	  Writing a dead letter (idemgate.dead_letters).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DEADLETTERS_H
#define IDEMGATE_DEADLETTERS_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

extern int64 RecordDeadLetter(const char *kind, text *key, pg_uuid_t *effect_id,
							  const char *effect_type, Jsonb *payload,
							  const char *error_class, const char *error,
							  int attempts);

#endif
