/*-------------------------------------------------------------------------
 *
 * src/guc.c
 *	  Definitions of the idemgate.* settings. Ranges are enforced here so
 *	  that the rest of the code can trust the values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "guc.h"

char	   *IdemgateDatabase = NULL;
int			IdemgateDispatchers = 1;
int			IdemgateBatchSize = 100;
int			IdemgatePollIntervalMs = 1000;
int			IdemgateMaxInFlight = 64;
bool		IdemgateActionsEnabled = true;
char	   *IdemgateAllowedHttpHosts = NULL;
int			IdemgateMaxBackoffSecs = 3600;
int			IdemgateMaxLeaseLifeSecs = 3600;
int			IdemgateMaxRunAttempts = 3;
int			IdemgateRetentionSecs = 30 * 24 * 3600;
int			IdemgateAlertFailures = 10;
int			IdemgateAlertStuckAfterSecs = 15 * 60;
int			IdemgateAlertDispatcherMissingAfterSecs = 60;

/* DefineIdemgateSettings registers every idemgate.* setting. */
void
DefineIdemgateSettings(void)
{
	/*
	 * Settings read only at server start exist only when the library is
	 * preloaded: PostgreSQL refuses to create them in a running backend,
	 * and without the preload there is no dispatcher for them to configure.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("idemgate.database",
								   "Database in which the dispatcher delivers effects.",
								   NULL, &IdemgateDatabase, "postgres",
								   PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
		DefineCustomIntVariable("idemgate.dispatchers",
								"Number of dispatcher background workers.",
								NULL, &IdemgateDispatchers, 1, 0, 8,
								PGC_POSTMASTER, 0, NULL, NULL, NULL);
	}
	DefineCustomIntVariable("idemgate.batch_size",
							"Effects a dispatcher claims per round.",
							NULL, &IdemgateBatchSize, 100, 1, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.poll_interval",
							"Longest sleep of an idle dispatcher; new effects wake it sooner.",
							NULL, &IdemgatePollIntervalMs, 1000, 10, 600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.max_in_flight",
							"Most HTTP requests a dispatcher has in flight at once.",
							NULL, &IdemgateMaxInFlight, 64, 1, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("idemgate.actions_enabled",
							 "External sends happen only when this and idemgate.set_actions_enabled() are both on.",
							 NULL, &IdemgateActionsEnabled, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("idemgate.allowed_http_hosts",
							   "Hosts to which plain http:// endpoints may be registered (comma-separated).",
							   NULL, &IdemgateAllowedHttpHosts, "localhost,127.0.0.1,::1",
							   PGC_SIGHUP, GUC_LIST_INPUT, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.max_backoff",
							"Longest wait between two attempts of an effect.",
							NULL, &IdemgateMaxBackoffSecs, 3600, 1, 7 * 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.max_lease_life",
							"Longest total life of a run's lease, renewals included.",
							NULL, &IdemgateMaxLeaseLifeSecs, 3600, 1, 7 * 24 * 3600,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.max_run_attempts",
							"Failures after which a retryable run failure becomes terminal.",
							NULL, &IdemgateMaxRunAttempts, 3, 1, 100,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.retention",
							"Age after which the dispatcher purges finished runs; 0 disables.",
							NULL, &IdemgateRetentionSecs, 30 * 24 * 3600, 0, PG_INT32_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.alert_failures",
							"Failures in 10 minutes above which the failure-rate alert fires.",
							NULL, &IdemgateAlertFailures, 10, 0, PG_INT32_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	/* Read by the alerts view (idemgate.alert_instances) with current_setting. */
	DefineCustomIntVariable("idemgate.alert_stuck_after",
							"Age of due pending effects after which the stuck_effects alert fires.",
							NULL, &IdemgateAlertStuckAfterSecs, 15 * 60, 1, 7 * 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("idemgate.alert_dispatcher_missing_after",
							"How long HTTP effects may be due with no running dispatcher serving the database before dispatcher_missing fires.",
							NULL, &IdemgateAlertDispatcherMissingAfterSecs, 60, 0, 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);

	MarkGUCPrefixReserved("idemgate");
}
