/*-------------------------------------------------------------------------
 *
 * src/core/args.c
 *	  Argument checks. Every SQL-callable function is declared non-strict
 *	  so that a NULL where a value is required is an error that names the
 *	  argument (22004) instead of a silent NULL result.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "core/idemgate_limits.h"
#include "core/sqlstates.h"

/* RequireArg raises 22004 when argument argno is NULL. */
void
RequireArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be NULL", name)));
}

/* CheckKeyText checks that an idempotency key is 1..512 bytes. */
void
CheckKeyText(text *key, const char *name)
{
	int			len = VARSIZE_ANY_EXHDR(key);

	if (len < 1 || len > IDEMGATE_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be between 1 and %d bytes long, not %d",
						name, IDEMGATE_MAX_KEY_BYTES, len),
				 errhint("Derive the key from the business event, e.g. "
						 "\"invoice-2026-0918-ACME-4471\".")));
}

/*
 * TruncateForMessage returns s cut to IDEMGATE_MAX_ECHO_BYTES on a character
 * boundary, with "..." appended when cut, so that echoing a caller's value
 * in an error message never turns a huge argument into a huge log line.
 */
char *
TruncateForMessage(const char *s)
{
	int			len = strlen(s);

	if (len <= IDEMGATE_MAX_ECHO_BYTES)
		return pstrdup(s);
	return psprintf("%s...", pnstrdup(s, pg_mbcliplen(s, len, IDEMGATE_MAX_ECHO_BYTES)));
}

/*
 * ClipErrorText returns an error text cut to IDEMGATE_MAX_ERROR_BYTES on a
 * character boundary, with IDEMGATE_TRUNCATED_MARKER appended when cut, or
 * NULL for NULL. Failures are recorded however long the provider's message:
 * cutting beats refusing.
 */
char *
ClipErrorText(const char *error)
{
	int			len;

	if (error == NULL)
		return NULL;
	len = strlen(error);
	if (len <= IDEMGATE_MAX_ERROR_BYTES)
		return pstrdup(error);
	return psprintf("%s%s",
					pnstrdup(error, pg_mbcliplen(error, len, IDEMGATE_MAX_ERROR_BYTES)),
					IDEMGATE_TRUNCATED_MARKER);
}

/* KeyArg returns a required idempotency key argument, checked. */
text *
KeyArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	text	   *key;

	RequireArg(fcinfo, argno, name);
	key = PG_GETARG_TEXT_PP(argno);
	CheckKeyText(key, name);
	return key;
}

/*
 * TextArg returns a required text argument that must be non-empty and at
 * most max_bytes long.
 */
text *
TextArg(FunctionCallInfo fcinfo, int argno, const char *name, int max_bytes)
{
	text	   *value;
	int			len;

	RequireArg(fcinfo, argno, name);
	value = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(value);
	if (len < 1 || len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be between 1 and %d bytes long, not %d",
						name, max_bytes, len)));
	return value;
}

/*
 * IntervalToUsecs converts an interval to microseconds, counting a month as
 * 30 days like PostgreSQL's interval comparison does. Saturates on overflow.
 */
int64
IntervalToUsecs(const Interval *iv)
{
	int64		days = (int64) iv->month * DAYS_PER_MONTH + iv->day;
	int64		usecs;

	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, iv->time, &usecs))
		return (days < 0) ? PG_INT64_MIN : PG_INT64_MAX;
	return usecs;
}

/* UsecsToInterval builds a plain time interval of usecs microseconds. */
Interval *
UsecsToInterval(int64 usecs)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = usecs;
	return iv;
}

/* FormatUsecs renders a duration in seconds, independent of IntervalStyle. */
char *
FormatUsecs(int64 usecs)
{
	if (usecs % USECS_PER_SEC == 0)
		return psprintf(INT64_FORMAT " s", usecs / USECS_PER_SEC);
	return psprintf("%.6f s", (double) usecs / USECS_PER_SEC);
}

/*
 * IntervalArg returns a required interval argument that must lie in
 * (min_usecs, max_usecs]: strictly positive leases, capped by a setting.
 */
Interval *
IntervalArg(FunctionCallInfo fcinfo, int argno, const char *name,
			int64 min_usecs, int64 max_usecs, const char *hint)
{
	Interval   *iv;
	int64		usecs;

	RequireArg(fcinfo, argno, name);
	iv = PG_GETARG_INTERVAL_P(argno);
	usecs = IntervalToUsecs(iv);
	if (usecs <= min_usecs || usecs > max_usecs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be greater than %s and at most %s",
						name, FormatUsecs(min_usecs), FormatUsecs(max_usecs)),
				 hint ? errhint("%s", hint) : 0));
	return iv;
}

/* SessionRoleName names the session's role, for the audit trail; see args.h. */
const char *
SessionRoleName(void)
{
	return GetUserNameFromId(GetSessionUserId(), false);
}
