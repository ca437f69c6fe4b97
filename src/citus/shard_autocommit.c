/*-------------------------------------------------------------------------
 *
 * src/citus/shard_autocommit.c
 *	  On Citus, a claim that is its whole transaction runs on its key's
 *	  node in one round trip (docs/citus.md, "Claims").
 *
 *	  A statement that a function runs through SPI is, for Citus, part of a
 *	  bigger transaction: it opens a transaction block on the worker and
 *	  commits it with a second round trip when the coordinator commits,
 *	  and it is planned on the coordinator. For "SELECT * FROM
 *	  idemgate.claim(...)" sent on its own, as n8n sends it, neither buys
 *	  anything. So claim() then calls claim_in_bucket, a distributed
 *	  function co-located with runs (sql/functions/claim_in_bucket.sql),
 *	  with citus.function_opens_transaction_block off: Citus sends the call
 *	  to the node of the key's shard, where it runs as that node's own
 *	  transaction, all of the claim's writes or none. What could still fail
 *	  on the coordinator after that commit is the reply, which can be lost
 *	  after any commit anyway; the lease covers both.
 *
 *	  "Its whole transaction": not in a transaction block (BEGIN, several
 *	  statements in one simple query, or an earlier statement of an
 *	  extended-protocol pipeline before its Sync), called by the outermost
 *	  statement (not from a function, a trigger, a CALL or a DO), run by
 *	  the client's portal, and that statement is exactly one FunctionScan
 *	  of this function with no filter, whose arguments call nothing
 *	  volatile. The transaction is then marked to commit as soon as the
 *	  statement ends, so that a pipeline of extended-protocol statements
 *	  cannot add a later statement to it (as CREATE DATABASE does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "tcop/pquery.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/portal.h"

#include "core/pg_compat.h"
#include "core/utility_chain.h"
#include "citus/shard_autocommit.h"

/*
 * How deep in statements this backend is (a statement a function runs is
 * 2, a command a CALL or DO runs is 2), and the outermost one, as
 * pg_stat_statements counts them; installed only when preloaded.
 */
static bool installed = false;
static int	nesting = 0;
static PlannedStmt *outermost = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

static void
CountingExecutorRun(EXECUTOR_RUN_PARAMS)
{
	PlannedStmt *saved = outermost;

	if (nesting == 0)
		outermost = queryDesc->plannedstmt;
	nesting++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(EXECUTOR_RUN_ARGS);
	}
	PG_FINALLY();
	{
		nesting--;
		outermost = saved;
	}
	PG_END_TRY();
}

static void
CountingExecutorFinish(QueryDesc *queryDesc)
{
	nesting++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

static void
CountingProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					   ProcessUtilityContext context, ParamListInfo params,
					   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	nesting++;
	PG_TRY();
	{
		NextProcessUtility(prev_ProcessUtility, pstmt, queryString, readOnlyTree, context,
						   params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

/*
 * InstallShardAutocommit installs the counting hooks (preload only), and
 * only beside Citus, which must be preloaded too: one node pays nothing.
 */
void
InstallShardAutocommit(void)
{
	if (shared_preload_libraries_string == NULL ||
		strstr(shared_preload_libraries_string, "citus") == NULL)
		return;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = CountingExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = CountingExecutorFinish;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = CountingProcessUtility;
	installed = true;
}

/*
 * CallIsWholeTransaction says whether the function call of fcinfo is the
 * whole of its transaction (see above), and if so marks the transaction
 * to commit when the statement ends.
 */
bool
CallIsWholeTransaction(FunctionCallInfo fcinfo)
{
	FunctionScan *scan;
	RangeTblFunction *rtfunc;
	FuncExpr   *call;

	if (!installed || nesting != 1 || outermost == NULL || IsTransactionBlock() ||
		(MyXactFlags & XACT_FLAGS_PIPELINING) != 0 || fcinfo->flinfo == NULL)
		return false;
	/* Run by the client's portal, not by a cursor kept past the commit. */
	if (ActivePortal == NULL || list_length(ActivePortal->stmts) != 1 ||
		linitial(ActivePortal->stmts) != outermost ||
		(ActivePortal->cursorOptions & CURSOR_OPT_HOLD) != 0)
		return false;
	if (outermost->commandType != CMD_SELECT || outermost->hasModifyingCTE ||
		outermost->subplans != NIL || outermost->rowMarks != NIL ||
		!IsA(outermost->planTree, FunctionScan))
		return false;
	scan = (FunctionScan *) outermost->planTree;
	if (list_length(scan->functions) != 1 || scan->funcordinality ||
		scan->scan.plan.initPlan != NIL || scan->scan.plan.qual != NIL)
		return false;
	rtfunc = linitial_node(RangeTblFunction, scan->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return false;
	call = (FuncExpr *) rtfunc->funcexpr;
	if (call->funcid != fcinfo->flinfo->fn_oid ||
		contain_volatile_functions((Node *) call->args))
		return false;
	MyXactFlags |= XACT_FLAGS_NEEDIMMEDIATECOMMIT;
	return true;
}

/* FunctionTransactionBlocks sets Citus's setting until EndShardAutocommit. */
static int
FunctionTransactionBlocks(const char *value)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("citus.function_opens_transaction_block", value,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return nestlevel;
}

/*
 * BeginShardAutocommit makes the statements that follow, until
 * EndShardAutocommit(nestlevel), commit on their shard at once. An error
 * in between restores the setting with the transaction's abort.
 */
int
BeginShardAutocommit(void)
{
	return FunctionTransactionBlocks("off");
}

/*
 * BeginShardTransactions is the opposite, Citus's default: for a function
 * that a caller in shard autocommit may run on this node (claim_in_bucket,
 * when Citus does not delegate it). EndShardAutocommit ends either.
 */
int
BeginShardTransactions(void)
{
	return FunctionTransactionBlocks("on");
}

void
EndShardAutocommit(int nestlevel)
{
	AtEOXact_GUC(true, nestlevel);
}
