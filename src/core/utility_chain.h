/*-------------------------------------------------------------------------
 *
 * src/core/utility_chain.h
 *	  Passing a utility statement on from one of our ProcessUtility hooks
 *	  (src/core/extension_notice.c, src/citus/shard_autocommit.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_UTILITY_CHAIN_H
#define IDEMGATE_UTILITY_CHAIN_H

#include "postgres.h"

#include "tcop/utility.h"

/*
 * NextProcessUtility runs the statement through prev, the hook installed
 * before ours, or through the standard one when there was none.
 */
static inline void
NextProcessUtility(ProcessUtility_hook_type prev, PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev)
		prev(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

#endif
