/*-------------------------------------------------------------------------
 *
 * src/spi_util.h
 *	  Saved SPI plans and small helpers to read SPI results.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SPI_UTIL_H
#define IDEMGATE_SPI_UTIL_H

#include "postgres.h"
#include "executor/spi.h"

/* A statement prepared once per backend and kept for its lifetime. */
typedef struct SavedStatement
{
	const char *sql;
	int			nargs;
	Oid			argtypes[16];
	SPIPlanPtr	plan;
} SavedStatement;

extern int	ExecSaved(SavedStatement *stmt, Datum *values, const char *nulls,
					  bool read_only, long count);
extern Datum GetResultDatum(int row, int col, bool *isnull);
extern void ConnectSPI(void);
extern void SetTextParam(Datum *values, char *nulls, int i, const char *s);

#endif
