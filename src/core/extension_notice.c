/*-------------------------------------------------------------------------
 *
 * src/core/extension_notice.c
 *	  What CREATE EXTENSION idemgate tells a newcomer: the NOTICE after it
 *	  in a database that the
 *	  dispatchers do not serve (docs/dispatcher.md, "Processes"). Without it, a database other than
 *	  idemgate.database looks healthy and never sends an HTTP effect.
 *
 *	  Only with shared_preload_libraries (otherwise there are no dispatchers
 *	  anywhere and the pull API is the documented way). A utility hook,
 *	  because a NOTICE raised by the extension script itself is swallowed:
 *	  extension scripts run with client_min_messages at least WARNING.
 *
 *	  Without the preload, CREATE EXTENSION (or ALTER EXTENSION UPDATE)
 *	  says so in one NOTICE instead: the library is first loaded by the
 *	  script, too late for a hook on that statement, so the notice waits
 *	  for the transaction's commit (XACT_EVENT_PRE_COMMIT, after the
 *	  script's client_min_messages is undone). And a SCHEMA clause is
 *	  refused with the reason (preload only, from the same hook).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "tcop/utility.h"

#include "core/extension_notice.h"
#include "core/guc.h"
#include "core/utility_chain.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * RefuseSchemaClause: CREATE EXTENSION idemgate SCHEMA x would fail with
 * PostgreSQL's "must be installed in schema pg_catalog" (the control file's
 * schema, so that the script can create schema idemgate itself), which
 * sends a newcomer looking for a pg_catalog install. Say what is true.
 */
static void
RefuseSchemaClause(CreateExtensionStmt *stmt)
{
	ListCell   *lc;

	/* IF NOT EXISTS on an installed extension does nothing: let it. */
	if (stmt->if_not_exists && OidIsValid(get_extension_oid(stmt->extname, true)))
		return;
	foreach(lc, stmt->options)
	{
		DefElem    *d = lfirst_node(DefElem, lc);

		/* pg_dump writes the control file's schema: that one is fine. */
		if (strcmp(d->defname, "schema") == 0 &&
			strcmp(defGetString(d), "pg_catalog") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("idemgate takes no SCHEMA clause: it always creates its own schema "
							"\"idemgate\""),
					 errdetail("Its tables and functions are in schema idemgate, "
							   "which the extension owns; DROP EXTENSION removes it."),
					 errhint("Run CREATE EXTENSION idemgate; and call its functions as "
							 "idemgate.claim(...), or add idemgate to search_path.")));
	}
}

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

	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, "idemgate") == 0)
		RefuseSchemaClause((CreateExtensionStmt *) parsetree);

	NextProcessUtility(prev_ProcessUtility, pstmt, queryString, readOnlyTree, context,
					   params, queryEnv, dest, qc);

	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, "idemgate") == 0 &&
		IdemgateDatabase != NULL)
	{
		char	   *here = get_database_name(MyDatabaseId);

		if (here != NULL && strcmp(here, IdemgateDatabase) != 0)
			ereport(NOTICE,
					(errmsg("idemgate: no dispatcher serves database \"%s\"; the dispatchers serve "
							"\"%s\" (idemgate.database)",
							here, IdemgateDatabase),
					 errdetail("HTTP effects of this database will not be sent; "
							   "the alert dispatcher_missing fires while they wait."),
					 errhint("Set idemgate.database = '%s' and restart the server, or send effects "
							 "with claim_effects().",
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

/* NotPreloadedAtCommit sends the NOTICE once, when the transaction commits. */
static void
NotPreloadedAtCommit(XactEvent event, void *arg)
{
	static bool said = false;

	if (event != XACT_EVENT_PRE_COMMIT || said)
		return;
	said = true;
	ereport(NOTICE,
			(errmsg(IDEMGATE_NOT_PRELOADED_MSG),
			 errdetail(IDEMGATE_NOT_PRELOADED_DETAIL),
			 errhint(IDEMGATE_NOT_PRELOADED_HINT)));
}

/*
 * NoticeNotPreloaded, from _PG_init without the preload: when the library
 * is being loaded by our extension script, the NOTICE is due at commit.
 */
void
NoticeNotPreloaded(void)
{
	if (creating_extension)
		RegisterXactCallback(NotPreloadedAtCommit, NULL);
}
