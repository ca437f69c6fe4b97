/*-------------------------------------------------------------------------
 *
 * src/core/args.h
 *	  Argument checks shared by every SQL-callable function: NULL → 22004,
 *	  out of range → 22023, each naming the argument.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_ARGS_H
#define IDEMGATE_ARGS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/jsonb.h"

#include "core/idemgate_limits.h"

#define IDEMGATE_TRUNCATED_MARKER " [truncated]"

extern void RequireArg(FunctionCallInfo fcinfo, int argno, const char *name);

/*
 * REQUIRED_ARG returns argument argno of the calling SQL function, read
 * with PG_GETARG_<getter> (UUID_P, INT64, BOOL, ...) once RequireArg has
 * refused a NULL.
 */
#define REQUIRED_ARG(argno, name, getter) \
	(RequireArg(fcinfo, (argno), (name)), PG_GETARG_##getter(argno))

extern text *KeyArg(FunctionCallInfo fcinfo, int argno, const char *name);
extern text *TextArg(FunctionCallInfo fcinfo, int argno, const char *name, int max_bytes);
extern Interval *IntervalArg(FunctionCallInfo fcinfo, int argno, const char *name,
							 int64 min_usecs, int64 max_usecs,
							 const char *hint);
extern char *FormatUsecs(int64 usecs);
extern int64 IntervalToUsecs(const Interval *iv);
extern Interval *UsecsToInterval(int64 usecs);
extern void CheckKeyText(text *key, const char *name);
extern char *TruncateForMessage(const char *s);
extern char *ClipErrorText(const char *error);
/* SessionRoleName names the session's role, for the audit trail. */
extern const char *SessionRoleName(void);

#endif
