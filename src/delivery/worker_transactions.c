/*-------------------------------------------------------------------------
 *
 * src/delivery/worker_transactions.c
 *	  How a dispatcher runs its transactions: each work in a READ
 *	  COMMITTED transaction of its own with SPI connected, an error logged
 *	  and rolled back so the loop goes on; whether the extension is there
 *	  and is the library's version; exiting at once when the postmaster is
 *	  gone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "citus/statements.h"
#include "core/guc.h"
#include "delivery/worker_transactions.h"

static SavedStatement extversion_stmt = {
	"SELECT extversion FROM pg_catalog.pg_extension"
	" WHERE extname OPERATOR(pg_catalog.=) 'idemgate'",
	0, {0}
};

/* ExtensionInstalled tells whether this database has the idemgate extension. */
bool
ExtensionInstalled(void)
{
	return OidIsValid(get_extension_oid("idemgate", true));
}

/*
 * SchemaMatchesLibrary tells whether the installed extension is the version
 * this library was built for. Between installing a new library and
 * ALTER EXTENSION idemgate UPDATE the schema is older than the code: the
 * dispatcher then claims nothing (outcomes already in flight are still
 * recorded) and says once what to run.
 */
bool
SchemaMatchesLibrary(void)
{
	static bool said_mismatch = false;
	bool		isnull = true;
	char	   *installed = "";

	ExecSaved(&extversion_stmt, NULL, NULL, true, 1);
	if (SPI_processed == 1)
	{
		Datum		v = GetResultDatum(0, 1, &isnull);

		if (!isnull)
			installed = TextDatumGetCString(v);
	}
	if (strcmp(installed, IDEMGATE_VERSION) == 0)
	{
		said_mismatch = false;
		return true;
	}
	if (!said_mismatch)
		ereport(LOG,
				(errmsg("idemgate dispatcher: extension version %s installed, "
						"library is %s; not claiming",
						installed, IDEMGATE_VERSION),
				 errhint("Run ALTER EXTENSION idemgate UPDATE in database \"%s\".",
						 IdemgateDatabase)));
	said_mismatch = true;
	return false;
}

/*
 * RunInTransaction runs work(arg) in a transaction of its own with SPI
 * connected. An error is logged and rolled back, and false is returned, so
 * the worker loop always goes on.
 *
 * Every transaction of the dispatcher is READ COMMITTED, whatever
 * default_transaction_isolation says (PostgreSQL's own InitPostgres does
 * the same for its catalog reads): its statements are written for a
 * snapshot of their own each (a claim sees every effect and kill switch
 * change committed before it; the switch read right before a send is the
 * last one committed), and a REPEATABLE READ or SERIALIZABLE default
 * would add serialization failures to every round under load. Set before
 * the transaction's first snapshot; test/t/150_serializable_default.pl.
 */
bool
RunInTransaction(void (*work) (void *arg), void *arg, MemoryContext loop_cxt)
{
	volatile bool ok = false;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		XactIsoLevel = XACT_READ_COMMITTED;
		PushActiveSnapshot(GetTransactionSnapshot());
		ConnectSPI();
		work(arg);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		ok = true;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(loop_cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(loop_cxt);
	/* Let autovacuum see our churn (rate-limited inside to once a second). */
	pgstat_report_stat(false);
	return ok;
}

/*
 * StopIfPostmasterDied exits at once when the postmaster is gone: nothing
 * more is claimed, sent or recorded, and the server can restart (a process
 * still attached to the old shared memory blocks that). Cheap: on Linux it
 * reads a flag set by the parent-death signal. Called on every loop path.
 */
void
StopIfPostmasterDied(void)
{
	if (!PostmasterIsAlive())
		proc_exit(1);
}
