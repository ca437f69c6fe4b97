/*-------------------------------------------------------------------------
 *
 * src/extension_notice.c
 *	  The NOTICE after CREATE EXTENSION idemgate in a database that the
 *	  dispatchers do not serve (docs/dispatcher.md, "Processes"). Without it, a database other than
 *	  idemgate.database looks healthy and never sends an HTTP effect.
 *
 *	  Only with shared_preload_libraries (otherwise there are no dispatchers
 *	  anywhere and the pull API is the documented way). A utility hook,
 *	  because a NOTICE raised by the extension script itself is swallowed:
 *	  extension scripts run with client_min_messages at least WARNING.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"

#include "extension_notice.h"
#include "guc.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * NoticeUtility runs the statement, then, after a successful CREATE
 * EXTENSION idemgate, says so when this database is not idemgate.database.
 */
static void
NoticeUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			  ProcessUtilityContext context, ParamListInfo params,
			  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);

	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, "idemgate") == 0 &&
		IdemgateDatabase != NULL)
	{
		char	   *here = get_database_name(MyDatabaseId);

		if (here != NULL && strcmp(here, IdemgateDatabase) != 0)
			ereport(NOTICE,
					(errmsg("idemgate: no dispatcher serves database \"%s\"; the dispatchers serve \"%s\" (idemgate.database)",
							here, IdemgateDatabase),
					 errdetail("HTTP effects of this database will not be sent; the alert dispatcher_missing fires while they wait."),
					 errhint("Set idemgate.database = '%s' and restart the server, or send effects with claim_effects().",
							 here)));
	}
}

/* InstallExtensionNotice installs the utility hook; see extension_notice.h. */
void
InstallExtensionNotice(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = NoticeUtility;
}
