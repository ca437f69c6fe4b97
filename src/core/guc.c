/*-------------------------------------------------------------------------
 *
 * src/core/guc.c
 *	  Definitions of the idemgate.* settings. Ranges (src/core/idemgate_limits.h)
 *	  and shapes (check hooks) are enforced here, so the rest of the code
 *	  can trust the values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "core/doc_limits.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"

char	   *IdemgateDatabase = NULL;
int			IdemgateDispatchers = 1;
int			IdemgateBatchSize = 100;
int			IdemgatePollIntervalMs = 1000;
int			IdemgateMaxInFlight = 64;
bool		IdemgateActionsEnabled = true;
char	   *IdemgateAllowedHttpHosts = NULL;
int			IdemgateMaxBackoffSecs = SECS_PER_HOUR;
int			IdemgateMaxLeaseLifeSecs = SECS_PER_HOUR;
int			IdemgateMaxRunAttempts = 3;
int			IdemgateRetentionSecs = IDEMGATE_DEFAULT_RETENTION_SECS;
char	   *IdemgateSecretsFile = NULL;
int			IdemgateAlertFailures = 10;
int			IdemgateAlertStuckAfterSecs = 15 * 60;
int			IdemgateAlertDispatcherMissingAfterSecs = 60;
int			IdemgateAlertStalledAfterSecs = 15 * 60;
int			IdemgateAlertLeaseTakeovers = 5;
int			IdemgateAlertApprovalWaitSecs = 4 * 3600;
int			IdemgateMaxRepairs = 2;
int			IdemgateTombstoneRetentionSecs = 400 * SECS_PER_DAY;
bool		IdemgateAlertNotifyDetails = true;
bool		IdemgateCitusLocalShards = true;
int			IdemgateCircuitFailures = 5;
int			IdemgateCircuitMaxHoldSecs = SECS_PER_DAY;

/*
 * CheckDatabaseName accepts a database name: 1..NAMEDATALEN-1 bytes. A
 * longer one would be silently truncated by the catalog lookup.
 */
static bool
CheckDatabaseName(char **newval, void **extra, GucSource source)
{
	size_t		len = *newval ? strlen(*newval) : 0;

	if (len == 0 || len >= NAMEDATALEN)
	{
		GUC_check_errdetail("idemgate.database must name a database (1 to %d bytes).",
							NAMEDATALEN - 1);
		return false;
	}
	return true;
}

/*
 * CheckHostList accepts a comma-separated list of host names and IP
 * literals (IPv6 with or without brackets, items may be double-quoted):
 * no empty item, no scheme, port, path or user part, no white space
 * inside a name (one colon is a port; IPv6 has two or more). Empty as a
 * whole means no plain-http host is allowed.
 */
static bool
CheckHostList(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";

	if (*p == '\0')
		return true;
	for (;;)
	{
		const char *end = strchr(p, ',');
		size_t		len = end ? (size_t) (end - p) : strlen(p);
		const char *s = p;
		const char *e = p + len;
		bool		bracketed;
		int			colons;

		while (s < e && (*s == ' ' || *s == '\t' || *s == '"'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '"'))
			e--;
		if (s == e)
		{
			GUC_check_errdetail("idemgate.allowed_http_hosts has an empty item.");
			return false;
		}
		bracketed = (*s == '[' && e[-1] == ']' && e - s > 2);
		for (const char *c = s + (bracketed ? 1 : 0); c < e - (bracketed ? 1 : 0); c++)
		{
			if (!(isalnum((unsigned char) *c) || *c == '.' || *c == '-' ||
				  *c == '_' || *c == ':' || *c == '%'))
			{
				GUC_check_errdetail("idemgate.allowed_http_hosts item \"%.*s\" is not a host name "
									"or IP address.",
									(int) Min(e - s, 64), s);
				GUC_check_errhint("List host names only, e.g. 'localhost,127.0.0.1,::1': "
								  "no scheme, port or path.");
				return false;
			}
		}
		colons = 0;
		for (const char *c = s; c < e; c++)
			colons += (*c == ':');
		if (colons == 1)
		{
			GUC_check_errdetail("idemgate.allowed_http_hosts item \"%.*s\" has a port.",
								(int) Min(e - s, 64), s);
			GUC_check_errhint("List host names only, e.g. 'localhost,127.0.0.1,::1': no scheme, "
							  "port or path.");
			return false;
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	return true;
}

/* An integer setting, as DefineCustomIntVariable takes it. */
typedef struct IntSetting
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	int		   *value;
	int			boot;
	int			min;
	int			max;
	GucContext	context;
	int			flags;
} IntSetting;

/* The integer settings a running server may change (SIGHUP or SUSET). */
static const IntSetting int_settings[] = {
	{"idemgate.batch_size", "Effects a dispatcher claims per round.", NULL,
	 &IdemgateBatchSize, 100, 1, 10000, PGC_SIGHUP, 0},
	{"idemgate.poll_interval", "Longest sleep of an idle dispatcher; new effects wake it sooner.",
	 NULL, &IdemgatePollIntervalMs, 1000, 10, 600000, PGC_SIGHUP, GUC_UNIT_MS},
	{"idemgate.circuit_failures",
	 "Retryable failures of one endpoint in a row that open its circuit (0: never).",
	 "While a circuit is open the endpoint's effects wait as pending and a "
	 "probe goes out after a backoff from 5 s to 5 min.",
	 &IdemgateCircuitFailures, 5, 0, 1000, PGC_SIGHUP, 0},
	{"idemgate.circuit_max_hold",
	 "Longest an effect waits behind an open circuit before it is dead-lettered as unavailable.",
	 NULL, &IdemgateCircuitMaxHoldSecs, SECS_PER_DAY, 60, 30 * SECS_PER_DAY,
	 PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.max_in_flight", "Most HTTP requests a dispatcher has in flight at once.", NULL,
	 &IdemgateMaxInFlight, 64, 1, IDEMGATE_MAX_IN_FLIGHT, PGC_SIGHUP, 0},
	{"idemgate.max_backoff",
	 "Longest backoff between two attempts of an effect; "
	 "a provider's Retry-After is honoured beyond it, up to 24 hours.",
	 NULL, &IdemgateMaxBackoffSecs, SECS_PER_HOUR, 1, IDEMGATE_MAX_WAIT_SETTING_SECS,
	 PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.max_lease_life", "Longest total life of a run's lease, renewals included.", NULL,
	 &IdemgateMaxLeaseLifeSecs, SECS_PER_HOUR, 1, IDEMGATE_MAX_WAIT_SETTING_SECS,
	 PGC_SUSET, GUC_UNIT_S},
	{"idemgate.max_run_attempts",
	 "Failures after which a retryable run failure becomes terminal.", NULL,
	 &IdemgateMaxRunAttempts, 3, 1, 100, PGC_SUSET, 0},
	{"idemgate.retention", "Age after which the dispatcher purges finished runs; 0 disables.",
	 NULL, &IdemgateRetentionSecs, IDEMGATE_DEFAULT_RETENTION_SECS, 0, PG_INT32_MAX,
	 PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.alert_failures",
	 "Failures in 10 minutes above which the failure-rate alert fires.", NULL,
	 &IdemgateAlertFailures, 10, 0, PG_INT32_MAX, PGC_SIGHUP, 0},
	/* Read by the alerts view (idemgate.alert_instances) with current_setting. */
	{"idemgate.alert_stuck_after",
	 "Age of due pending effects after which the stuck_effects alert fires.", NULL,
	 &IdemgateAlertStuckAfterSecs, 15 * 60, 1, 7 * 24 * 3600, PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.alert_dispatcher_missing_after",
	 "How long HTTP effects may be due with no running dispatcher serving "
	 "the database before dispatcher_missing fires.",
	 NULL, &IdemgateAlertDispatcherMissingAfterSecs, 60, 0, 24 * 3600, PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.alert_stalled_after",
	 "How long a run may sit in processing with an expired lease, "
	 "or in failed_retryable, before stalled_runs fires.",
	 NULL, &IdemgateAlertStalledAfterSecs, 15 * 60, 1, IDEMGATE_MAX_ALERT_STALLED_SECS,
	 PGC_SIGHUP, GUC_UNIT_S},
	{"idemgate.alert_lease_takeovers",
	 "Takeovers of expired leases in one workflow in 10 minutes above which "
	 "lease_takeovers fires.",
	 NULL, &IdemgateAlertLeaseTakeovers, 5, 0, PG_INT32_MAX, PGC_SIGHUP, 0},
	{"idemgate.alert_approval_wait",
	 "How long an approval may wait undecided before approvals_waiting fires.", NULL,
	 &IdemgateAlertApprovalWaitSecs, 4 * 3600, 60, IDEMGATE_MAX_ALERT_APPROVAL_WAIT_SECS,
	 PGC_SIGHUP, GUC_UNIT_S},
	/* Read by record_validation: the seeds' bounded repair. */
	{"idemgate.max_repairs",
	 "Invalid validations of one run that may be repaired; "
	 "the next one fails the run for good (invalid_output).",
	 NULL, &IdemgateMaxRepairs, 2, 0, IDEMGATE_MAX_REPAIRS, PGC_SIGHUP, 0},
	/* Read by purge and purge_tombstones. */
	{"idemgate.tombstone_retention",
	 "How long purge keeps a purged run's key, payload hash and final "
	 "state, so that a late duplicate is still recognised.",
	 NULL, &IdemgateTombstoneRetentionSecs, 400 * SECS_PER_DAY, 0,
	 IDEMGATE_MAX_TOMBSTONE_RETENTION_SECS, PGC_SIGHUP, GUC_UNIT_S},
};

/* DefineIdemgateSettings registers every idemgate.* setting. */
void
DefineIdemgateSettings(void)
{
	/*
	 * Settings read only at server start. Without the preload there is no
	 * dispatcher for them to configure and PostgreSQL refuses to create a
	 * PGC_POSTMASTER setting in a running backend, so they are defined as
	 * SIGHUP ones there: inert, but a postgresql.conf that names them is not
	 * answered in every session with "invalid configuration parameter name
	 * ... removing it", which reads as a misspelled setting (CREATE
	 * EXTENSION and dispatcher_status() say what is really missing).
	 */
	{
		GucContext	at_start = process_shared_preload_libraries_in_progress ?
			PGC_POSTMASTER : PGC_SIGHUP;

		DefineCustomStringVariable("idemgate.database",
								   "Database in which the dispatcher delivers effects.",
								   NULL, &IdemgateDatabase, "postgres",
								   at_start, GUC_SUPERUSER_ONLY,
								   CheckDatabaseName, NULL, NULL);
		DefineCustomIntVariable("idemgate.dispatchers",
								"Number of dispatcher background workers.",
								NULL, &IdemgateDispatchers, 1, 0, IDEMGATE_MAX_DISPATCHERS,
								at_start, 0, NULL, NULL, NULL);
	}
	for (int i = 0; i < lengthof(int_settings); i++)
	{
		const IntSetting *g = &int_settings[i];

		DefineCustomIntVariable(g->name, g->short_desc, g->long_desc, g->value, g->boot,
								g->min, g->max, g->context, g->flags, NULL, NULL, NULL);
	}
	DefineCustomBoolVariable("idemgate.actions_enabled",
							 "External sends happen only when this and "
							 "idemgate.set_actions_enabled() are both on.",
							 NULL, &IdemgateActionsEnabled, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("idemgate.allowed_http_hosts",
							   "Hosts to which plain http:// endpoints may be registered "
							   "(comma-separated).",
							   NULL, &IdemgateAllowedHttpHosts, "localhost,127.0.0.1,::1",
							   PGC_SIGHUP, GUC_LIST_INPUT, CheckHostList, NULL, NULL);

	/*
	 * Read by publish_alerts. Anyone who may connect may LISTEN, so this is
	 * the superuser's choice, not a session's.
	 */
	DefineCustomBoolVariable("idemgate.alert_notify_details",
							 "NOTIFY idemgate_alerts payloads name the business event (subject, "
							 "count, message with the first keys).",
							 NULL, &IdemgateAlertNotifyDetails, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);

	/* Read by src/citus/local_shards.c (docs/citus.md, "Local shards"). */
	DefineCustomBoolVariable("idemgate.citus_local_shards",
							 "On Citus, statements on a shard placed on this node run on the "
							 "shard's tables directly, outside transaction blocks.",
							 NULL, &IdemgateCitusLocalShards, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);

	/* Read by src/policy/secrets.c: where provider credentials live, not in a table. */
	DefineCustomStringVariable("idemgate.secrets_file",
							   "File of the secrets endpoint headers name as ${secret:NAME} (a "
							   "JSON object of strings; outside the data directory, "
							   "owned by the server's user, mode 0600).",
							   NULL, &IdemgateSecretsFile, "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);

	DefineDocumentLimitSettings();

	MarkGUCPrefixReserved("idemgate");
}
