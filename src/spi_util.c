/*-------------------------------------------------------------------------
 *
 * src/spi_util.c
 *	  Saved SPI plans: each statement is parsed and planned once per
 *	  backend, then reused. Statements are parameterised; no value is ever
 *	  spliced into SQL text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "spi_util.h"

/* ConnectSPI connects to SPI or raises an error. */
void
ConnectSPI(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

/*
 * ExecSaved runs a saved statement, preparing it on first use, and returns
 * the SPI result code. Errors from the statement propagate as usual.
 */
int
ExecSaved(SavedStatement *stmt, Datum *values, const char *nulls,
		  bool read_only, long count)
{
	int			rc;

	if (stmt->plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(stmt->sql, stmt->nargs, stmt->argtypes,
											  stmt->cursor_options);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 stmt->sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		stmt->plan = plan;
		stmt->planned = false;
	}
	if ((stmt->cursor_options & CURSOR_OPT_GENERIC_PLAN) &&
		(!stmt->planned || !SPI_plan_is_valid(stmt->plan)))
	{
		/*
		 * This execution makes the generic plan: index scans only, and no
		 * JIT. A generic plan's cost counts a LIMIT $n as a fraction of the
		 * table, so with a large outbox it passed jit_above_cost and every
		 * later execution compiled its expressions with LLVM first: 65% of
		 * the pull API's CPU with 200,000 effects (bench/pull).
		 */
		int			nest = NewGUCNestLevel();

		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		rc = SPI_execute_plan(stmt->plan, values, nulls, read_only, count);
		AtEOXact_GUC(true, nest);
		stmt->planned = true;
	}
	else
		rc = SPI_execute_plan(stmt->plan, values, nulls, read_only, count);
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed for \"%s\": %s",
			 stmt->sql, SPI_result_code_string(rc));
	return rc;
}

/* GetResultDatum returns column col (1-based) of result row row. */
Datum
GetResultDatum(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/* SetTextParam sets parameter i to the text s, or to NULL when s is NULL. */
void
SetTextParam(Datum *values, char *nulls, int i, const char *s)
{
	values[i] = s ? CStringGetTextDatum(s) : (Datum) 0;
	nulls[i] = s ? ' ' : 'n';
}
