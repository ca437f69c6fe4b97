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
#include "utils/snapmgr.h"

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
 * ExecSavedIn runs a saved statement, preparing it on first use, in
 * snapshot (InvalidSnapshot: as SPI chooses, the transaction's in
 * REPEATABLE READ and SERIALIZABLE) and returns the SPI result code. Errors
 * from the statement propagate as usual.
 */
static int
ExecSavedIn(SavedStatement *stmt, Datum *values, const char *nulls,
			bool read_only, long count, Snapshot snapshot)
{
	int			rc;
	int			nest = 0;
	bool		planning;

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
	planning = (stmt->cursor_options & CURSOR_OPT_GENERIC_PLAN) &&
		(!stmt->planned || !SPI_plan_is_valid(stmt->plan));
	if (planning)
	{
		/*
		 * This execution makes the generic plan: index scans only, and no
		 * JIT. A generic plan's cost counts a LIMIT $n as a fraction of the
		 * table, so with a large outbox it passed jit_above_cost and every
		 * later execution compiled its expressions with LLVM first: 65% of
		 * the pull API's CPU with 200,000 effects (bench/pull).
		 */
		nest = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	if (snapshot == InvalidSnapshot)
		rc = SPI_execute_plan(stmt->plan, values, nulls, read_only, count);
	else
		rc = SPI_execute_snapshot(stmt->plan, values, nulls, snapshot, InvalidSnapshot,
								  read_only, true, count);
	if (planning)
	{
		AtEOXact_GUC(true, nest);
		stmt->planned = true;
	}
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed for \"%s\": %s",
			 stmt->sql, SPI_result_code_string(rc));
	return rc;
}

/*
 * ExecSaved runs a saved statement, preparing it on first use, and returns
 * the SPI result code. Errors from the statement propagate as usual.
 */
int
ExecSaved(SavedStatement *stmt, Datum *values, const char *nulls,
		  bool read_only, long count)
{
	return ExecSavedIn(stmt, values, nulls, read_only, count, InvalidSnapshot);
}

/*
 * ExecSavedLatest is ExecSaved in a snapshot taken now rather than the
 * transaction's: whatever the isolation level, the statement sees every
 * transaction that committed before it started, and this transaction's own
 * changes, as a statement in READ COMMITTED does. It is for a check made
 * after taking the row locks that every writer of what is checked holds
 * while it writes, so that nothing the check depends on can be in flight
 * (docs/outbox.md, "Completing a run"). PostgreSQL's own foreign key checks
 * do the same under REPEATABLE READ (ri_triggers.c, GetLatestSnapshot).
 * Rows it changes need not be visible to the transaction's snapshot: no
 * cross-check is made.
 */
int
ExecSavedLatest(SavedStatement *stmt, Datum *values, const char *nulls, long count)
{
	return ExecSavedIn(stmt, values, nulls, false, count, GetLatestSnapshot());
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
