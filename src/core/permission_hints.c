/*-------------------------------------------------------------------------
 *
 * src/core/permission_hints.c
 *	  "permission denied for function consume_approval" named no bundle, so
 *	  a newcomer whose n8n credential lacked one could not tell which to
 *	  ask for. With the library preloaded, PostgreSQL's own permission
 *	  errors on idemgate's functions, views and tables get a HINT naming the
 *	  bundles that hold the object and the grant_role call (README.md,
 *	  "Security").
 *
 * Design note: the error comes from PostgreSQL's ACL check, before any of
 * our code runs, and the only place to add to it is emit_log_hook, where
 * no catalog or table may be read. So the bundles are in a table here,
 * made from idemgate.bundle_members; test/sql/permission_hints.sql calls
 * every function and reads every relation of bundle_members as a role
 * without bundles and shows, beside each hint, the bundles the table says:
 * a bundle change that is not made here too shows in its output. The
 * object name is taken from the message's end (English messages; other
 * lc_messages get no hint); a user's own object of the same name in
 * another schema gets the hint too, which is why it says "idemgate.".
 * The hook runs only for errors that reach the server log (level at or
 * above log_min_messages).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/elog.h"
#include "utils/memutils.h"

#include "core/permission_hints.h"

typedef struct BundleHolder
{
	const char *name;
	const char *bundles;
} BundleHolder;

/* Functions: SELECT ... FROM idemgate.bundle_members WHERE fn IS NOT NULL. */
static const BundleHolder function_bundles[] = {
	{"actions_enabled", "client, operator, reader"},
	{"alert_pending_types", "operator, reader"},
	{"alert_unsettled_runs", "operator, reader"},
	{"alert_watched_workflows", "operator, reader"},
	{"alerts_firing", "operator, reader"},
	{"bundle_members_canonical", "operator"},
	{"cancel_approval", "operator"},
	{"cancel_effect", "operator"},
	{"cancel_in_window", "approver, operator"},
	{"cas_transition", "client, operator"},
	{"claim", "client, operator"},
	{"claim_effects", "client, operator"},
	{"claim_in_bucket", "operator"},
	{"claim_lease", "client, operator"},
	{"clear_payload_mismatches", "operator"},
	{"complete_effect", "client, operator"},
	{"complete_settled_runs", "operator"},
	{"consume_approval", "approver, operator"},
	{"control_restore", "operator"},
	{"dispatcher_status", "operator, reader"},
	{"distribute", "operator"},
	{"distribute_tombstones", "operator"},
	{"distributed_alert_pending_types", "operator"},
	{"distributed_alert_unsettled_runs", "operator"},
	{"distributed_alert_watched_workflows", "operator"},
	{"distributed_sync_grants", "operator"},
	{"distributed_wrap_view", "operator"},
	{"effect_envelope", "operator"},
	{"effect_type_metrics", "operator, reader"},
	{"enqueue_effect", "client, operator"},
	{"expire_approvals", "operator"},
	{"fail", "client, operator"},
	{"fail_effect", "client, operator"},
	{"grant_effect_type", "operator"},
	{"grant_role", "operator"},
	{"hash_payload", "client, operator"},
	{"hash_token", "approver, client, operator"},
	{"hold_sends_trigger", "operator"},
	{"key_bucket", "operator, reader"},
	{"metrics", "operator, reader"},
	{"missing_secrets", "operator, reader"},
	{"node_dispatcher_status", "operator, reader"},
	{"pause_effect_type", "operator"},
	{"payload_mismatches", "operator, reader"},
	{"peek_approval", "approver, operator"},
	{"prometheus", "operator, reader"},
	{"publish_alerts", "operator"},
	{"purge", "operator"},
	{"purge_dead_letters", "operator"},
	{"purge_tombstones", "operator"},
	{"record_validation", "client, operator"},
	{"register_endpoint", "operator"},
	{"register_rerun", "operator"},
	{"reinject", "operator"},
	{"reinject_all", "operator"},
	{"renew_lease", "client, operator"},
	{"request_approval", "client, operator"},
	{"reset_circuit", "operator"},
	{"resolve_effect", "operator"},
	{"resume_effect_type", "operator"},
	{"revoke_effect_type", "operator"},
	{"revoke_role", "operator"},
	{"routed_id", "operator"},
	{"run_metrics", "operator, reader"},
	{"run_payload_hmac", "operator, reader"},
	{"set_actions_enabled", "operator"},
	{"set_effect_policy", "operator"},
	{"supersede", "operator"},
	{"unregister_endpoint", "operator"},
	{"unwatch_workflow", "operator"},
	{"uuid_bucket", "operator, reader"},
	{"validate", "client, operator"},
	{"watch_workflow", "operator"},
};

/* Views and tables: ... WHERE rel IS NOT NULL. */
static const BundleHolder relation_bundles[] = {
	{"alerts", "operator, reader"},
	{"approval_status", "operator, reader"},
	{"cancel_windows", "approver, operator"},
	{"dead_letter_summary", "operator, reader"},
	{"dead_letters", "operator, reader"},
	{"effect_policies", "operator, reader"},
	{"effect_type_grants", "operator"},
	{"effect_type_policies", "operator"},
	{"effect_types", "operator, reader"},
	{"endpoint_health", "operator, reader"},
	{"endpoints", "operator"},
	{"events", "operator, reader"},
	{"key_history", "operator, reader"},
	{"metrics_rollup", "operator"},
	{"outbox", "operator"},
	{"paused_effect_types", "operator"},
	{"run_metrics_rollup", "operator"},
	{"runs", "operator"},
	{"tombstones", "operator"},
};

static emit_log_hook_type prev_emit_log_hook = NULL;

/* BundlesOf finds name in holders (n of them), or NULL. */
static const char *
BundlesOf(const BundleHolder *holders, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(holders[i].name, name) == 0)
			return holders[i].bundles;
	return NULL;
}

/* FirstBundle copies the first of a ", "-separated list into buf. */
static const char *
FirstBundle(const char *bundles, char *buf, size_t size)
{
	size_t		len = strcspn(bundles, ",");

	if (len >= size)
		len = size - 1;
	memcpy(buf, bundles, len);
	buf[len] = '\0';
	return buf;
}

/* AddBundleHint is the emit_log_hook. */
static void
AddBundleHint(ErrorData *edata)
{
	const char *kind = NULL;
	const char *bundles = NULL;
	const char *name;

	if (edata->elevel == ERROR && edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE &&
		edata->hint == NULL && edata->message_id != NULL && edata->message != NULL &&
		(name = strrchr(edata->message, ' ')) != NULL)
	{
		name++;
		if (strcmp(edata->message_id, "permission denied for function %s") == 0)
		{
			kind = "function";
			bundles = BundlesOf(function_bundles, lengthof(function_bundles), name);
		}
		else if (strcmp(edata->message_id, "permission denied for schema %s") == 0 &&
				 strcmp(name, "idemgate") == 0)
		{
			kind = "schema";
			bundles = "client, approver, operator, reader";
		}
		else if (strcmp(edata->message_id, "permission denied for view %s") == 0 ||
				 strcmp(edata->message_id, "permission denied for table %s") == 0)
		{
			kind = "relation";
			bundles = BundlesOf(relation_bundles, lengthof(relation_bundles), name);
		}
	}
	if (bundles != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(ErrorContext);
		char		first[32];

		if (strcmp(kind, "schema") == 0)
			edata->hint = pstrdup("Your role holds no idemgate bundle (client, approver, operator, "
								  "reader); an operator grants one with "
								  "SELECT idemgate.grant_role('<role>', 'client').");
		else
			edata->hint = psprintf("idemgate.%s%s is in the bundle%s %s; an operator grants one "
								   "with SELECT idemgate.grant_role('<role>', '%s'), to the "
								   "credential whose job needs it (README.md, \"Roles\": "
								   "a workflow's credential is a client, never an approver).",
								   name, strcmp(kind, "function") == 0 ? "()" : "",
								   strchr(bundles, ',') ? "s" : "", bundles,
								   FirstBundle(bundles, first, sizeof(first)));
		MemoryContextSwitchTo(old);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/* InstallPermissionHints installs the hook; from _PG_init (preload only). */
void
InstallPermissionHints(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = AddBundleHint;
}
