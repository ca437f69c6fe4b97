/*-------------------------------------------------------------------------
 *
 * src/delivery/launcher.c
 *	  The launcher background worker: waits for idemgate.database to exist,
 *	  then keeps idemgate.dispatchers dispatchers running in it.
 *
 * The launcher is connected to no database; it reads pg_database (a shared
 * catalog) every poll interval and restarts any dispatcher that exits, at
 * most once per RESTART_THROTTLE_MS per slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "delivery/launcher.h"
#include "core/dispatcher_shmem.h"
#include "core/guc.h"
#include "core/worker_signals.h"

/* Least time between two starts of one dispatcher slot. */
#define RESTART_THROTTLE_MS 1000

/* RegisterIdemgateLauncher registers the launcher; from _PG_init only. */
void
RegisterIdemgateLauncher(void)
{
	BackgroundWorker bgw;

	if (IdemgateDispatchers <= 0)
		return;
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "idemgate");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "IdemgateLauncherMain");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "idemgate launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "idemgate launcher");
	bgw.bgw_main_arg = (Datum) 0;
	bgw.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&bgw);
}

/*
 * DatabaseOidByName finds a database by scanning pg_database, as the
 * autovacuum launcher does: a process connected to no database can read
 * shared catalogs only by heap scan. InvalidOid when there is none.
 */
static Oid
DatabaseOidByName(const char *name)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	Oid			result = InvalidOid;

	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (strcmp(NameStr(db->datname), name) == 0 && db->datconnlimit != DATCONNLIMIT_INVALID_DB)
		{
			result = db->oid;
			break;
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/* StartDispatcher starts dispatcher slot in database dboid. */
static BackgroundWorkerHandle *
StartDispatcher(int slot, Oid dboid)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle = NULL;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "idemgate");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "IdemgateDispatcherMain");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "idemgate dispatcher %d", slot);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "idemgate dispatcher");
	bgw.bgw_main_arg = Int32GetDatum(slot);
	memcpy(bgw.bgw_extra, &dboid, sizeof(Oid));
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		ereport(WARNING,
				(errmsg("idemgate: could not start dispatcher %d", slot),
				 errhint("Raise max_worker_processes.")));
		handle = NULL;
	}
	MemoryContextSwitchTo(old);
	return handle;
}

/*
 * IdemgateLauncherMain waits for idemgate.database to exist, then keeps
 * idemgate.dispatchers dispatchers running in it.
 */
void
IdemgateLauncherMain(Datum main_arg)
{
	BackgroundWorkerHandle *handles[IDEMGATE_MAX_DISPATCHERS] = {0};
	TimestampTz last_start[IDEMGATE_MAX_DISPATCHERS] = {0};
	MemoryContext loop_cxt;
	bool		said_waiting = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, IdemgateSigterm);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("idemgate launcher");

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "idemgate launcher loop",
									 ALLOCSET_DEFAULT_SIZES);

	while (!got_sigterm)
	{
		Oid			dboid = InvalidOid;
		int			n = Min(IdemgateDispatchers, IDEMGATE_MAX_DISPATCHERS);

		CHECK_FOR_INTERRUPTS();
		ReloadConfigIfPending();
		MemoryContextReset(loop_cxt);
		MemoryContextSwitchTo(loop_cxt);

		pgstat_report_activity(STATE_RUNNING, "checking idemgate.database");
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		/* READ COMMITTED whatever the default, as the dispatchers' (see RunInTransaction). */
		XactIsoLevel = XACT_READ_COMMITTED;
		PushActiveSnapshot(GetTransactionSnapshot());
		dboid = DatabaseOidByName(IdemgateDatabase);
		PopActiveSnapshot();
		CommitTransactionCommand();
		pgstat_report_stat(false);
		MemoryContextSwitchTo(loop_cxt);

		if (!OidIsValid(dboid))
		{
			if (!said_waiting)
				ereport(LOG,
						(errmsg("idemgate launcher: waiting for database \"%s\" to exist",
								IdemgateDatabase),
						 errhint("Create it, or set idemgate.database.")));
			said_waiting = true;
		}
		else
		{
			TimestampTz now = GetCurrentTimestamp();

			said_waiting = false;
			for (int i = 0; i < n; i++)
			{
				pid_t		pid;

				if (handles[i] != NULL &&
					GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED)
					continue;
				if (handles[i] != NULL)
				{
					pfree(handles[i]);
					handles[i] = NULL;
				}
				/* A dispatcher left by an earlier launcher still runs: keep it. */
				if (SlotTakenByLiveProcess(i))
					continue;
				if (last_start[i] != 0 &&
					!TimestampDifferenceExceeds(last_start[i], now, RESTART_THROTTLE_MS))
					continue;
				last_start[i] = now;
				handles[i] = StartDispatcher(i, dboid);
			}
		}

		pgstat_report_activity(STATE_IDLE, NULL);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(IdemgatePollIntervalMs, RESTART_THROTTLE_MS),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/* Our dispatchers go with us; the next launcher starts fresh ones. */
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
		if (handles[i] != NULL)
			TerminateBackgroundWorker(handles[i]);
	proc_exit(0);
}
