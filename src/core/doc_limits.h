/*-------------------------------------------------------------------------
 *
 * src/core/doc_limits.h
 *	  idemgate.max_document_size: the largest JSON document an argument
 *	  may carry (src/core/doc_limits.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DOC_LIMITS_H
#define IDEMGATE_DOC_LIMITS_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/jsonb.h"

extern int	IdemgateMaxDocumentSize;

extern void DefineDocumentLimitSettings(void);

/*
 * CheckDocumentArg raises 54000 naming the argument and the limit when
 * argument argno (a jsonb, not NULL) is larger than
 * idemgate.max_document_size. Reads the size without detoasting.
 */
extern void CheckDocumentArg(FunctionCallInfo fcinfo, int argno, const char *name);

/* DocumentArg returns argument argno, not NULL and checked by CheckDocumentArg. */
extern Jsonb *DocumentArg(FunctionCallInfo fcinfo, int argno, const char *name);

#endif
