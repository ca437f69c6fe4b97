/*-------------------------------------------------------------------------
 *
 * src/core/doc_limits.c
 *	  idemgate.max_document_size (README.md, "Security"): payloads, cards, effects,
 *	  results and validated outputs larger than the limit are refused with
 *	  54000 (program_limit_exceeded) naming the argument and the limit,
 *	  before anything is written. The size is that of the jsonb value as
 *	  stored, uncompressed (what the rows and WAL would hold).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "core/args.h"
#include "core/doc_limits.h"

#define DEFAULT_MAX_DOCUMENT_SIZE (1024 * 1024)
#define MIN_MAX_DOCUMENT_SIZE 1024

int			IdemgateMaxDocumentSize = DEFAULT_MAX_DOCUMENT_SIZE;

/* CheckMaxDocumentSize refuses limits too small to hold an ordinary payload. */
static bool
CheckMaxDocumentSize(int *newval, void **extra, GucSource source)
{
	if (*newval < MIN_MAX_DOCUMENT_SIZE)
	{
		GUC_check_errdetail("idemgate.max_document_size must be at least %d bytes.",
							MIN_MAX_DOCUMENT_SIZE);
		GUC_check_errhint("The default is 1 MB; documents are payloads, cards, effects, "
						  "results and validated outputs.");
		return false;
	}
	return true;
}

/* DefineDocumentLimitSettings registers idemgate.max_document_size. */
void
DefineDocumentLimitSettings(void)
{
	DefineCustomIntVariable("idemgate.max_document_size",
							"Largest JSON document (payload, card, effects, result, "
							"validated output) accepted.",
							"Larger documents are refused with SQLSTATE 54000.",
							&IdemgateMaxDocumentSize, DEFAULT_MAX_DOCUMENT_SIZE,
							1, MaxAllocSize / 2,
							PGC_SUSET, GUC_UNIT_BYTE,
							CheckMaxDocumentSize, NULL, NULL);
}

/* CheckDocumentArg checks one jsonb argument; see doc_limits.h. */
void
CheckDocumentArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	Size		size;

	if (PG_ARGISNULL(argno))
		return;
	size = toast_raw_datum_size(PG_GETARG_DATUM(argno)) - VARHDRSZ;
	if (size > (Size) IdemgateMaxDocumentSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too large: %zu bytes, the limit is %d bytes",
						name, size, IdemgateMaxDocumentSize),
				 errhint("Keep large documents elsewhere and pass a reference, or have a superuser "
						 "raise idemgate.max_document_size.")));
}

/* DocumentArg; see doc_limits.h. */
Jsonb *
DocumentArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	RequireArg(fcinfo, argno, name);
	CheckDocumentArg(fcinfo, argno, name);
	return PG_GETARG_JSONB_P(argno);
}
