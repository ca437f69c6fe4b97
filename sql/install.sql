\echo Use "CREATE EXTENSION idemgate" to load this file. \quit

-- sql/install.sql — a fresh CREATE EXTENSION idemgate: the current
-- definition of every object, one file each (sql/tables, sql/functions,
-- sql/views), in an order that satisfies their dependencies. The Makefile
-- assembles it into idemgate--<version>.sql, each \ir line replaced by the
-- file it names; the update from the previous version
-- (sql/<from>--<version>/) includes the same files for what it adds or
-- changes, so both paths run the same text. test/t/100_update.pl checks
-- that an updated install equals a fresh one, catalog and privileges.

CREATE SCHEMA idemgate;
COMMENT ON SCHEMA idemgate IS 'idemgate: idempotency, leases, approvals, outbox, dead letters';
REVOKE ALL ON SCHEMA idemgate FROM PUBLIC;

-- Nothing here is readable, writable or executable by PUBLIC: every access
-- goes through SECURITY DEFINER functions whose search_path is pinned, and
-- rights come in bundles granted with idemgate.grant_role() (sql/bundles.sql).

-- The functions the tables' triggers call.
\ir functions/bundle_members_canonical.sql
\ir functions/control_restore.sql
\ir functions/hold_sends_trigger.sql

-- Tables, each with its indexes, triggers and comments.
\ir tables/runs.sql
\ir tables/events.sql
\ir tables/dead_letters.sql
\ir tables/approvals.sql
\ir tables/outbox.sql
\ir tables/endpoints.sql
\ir tables/control.sql
\ir tables/watched_workflows.sql
\ir tables/bundle_members.sql
\ir tables/alert_state.sql
\ir tables/granted_bundles.sql
\ir tables/paused_effect_types.sql
\ir tables/metrics_rollup.sql
\ir tables/effect_type_rollup.sql
\ir tables/effect_type_grants.sql
\ir tables/run_metrics_rollup.sql
\ir tables/effect_type_policies.sql
\ir tables/tombstones.sql
\ir tables/endpoint_circuits.sql
\ir tables/installation_secret.sql

-- Functions.
\ir functions/claim.sql
\ir functions/claim_lease.sql
\ir functions/hash_payload.sql
\ir functions/cas_transition.sql
\ir functions/renew_lease.sql
\ir functions/fail.sql
\ir functions/supersede.sql
\ir functions/enqueue_effect.sql
\ir functions/request_approval.sql
\ir functions/hash_token.sql
\ir functions/peek_approval.sql
\ir functions/consume_approval.sql
\ir functions/expire_approvals.sql
\ir functions/claim_effects.sql
\ir functions/complete_effect.sql
\ir functions/fail_effect.sql
\ir functions/reinject.sql
\ir functions/reinject_all.sql
\ir functions/resolve_effect.sql
\ir functions/set_actions_enabled.sql
\ir functions/actions_enabled.sql
\ir functions/register_endpoint.sql
\ir functions/validate.sql
\ir functions/record_validation.sql
\ir functions/metrics.sql
\ir functions/prometheus.sql
\ir functions/watch_workflow.sql
\ir functions/unwatch_workflow.sql
\ir functions/publish_alerts.sql
\ir functions/purge.sql
\ir functions/purge_dead_letters.sql
\ir functions/dispatcher_status.sql
\ir functions/grant_role.sql
\ir functions/revoke_role.sql
\ir functions/pause_effect_type.sql
\ir functions/resume_effect_type.sql
\ir functions/unregister_endpoint.sql
\ir functions/cancel_effect.sql
\ir functions/cancel_approval.sql
\ir functions/effect_type_metrics.sql
\ir functions/alerts_firing.sql
\ir functions/grant_effect_type.sql
\ir functions/revoke_effect_type.sql
\ir functions/payload_mismatches.sql
\ir functions/clear_payload_mismatches.sql
\ir functions/run_metrics.sql
\ir functions/set_effect_policy.sql
\ir functions/cancel_in_window.sql
\ir functions/register_rerun.sql
\ir functions/node_dispatcher_status.sql
\ir functions/complete_settled_runs.sql
\ir functions/alert_pending_types.sql
\ir functions/alert_watched_workflows.sql
\ir functions/alert_unsettled_runs.sql
\ir functions/key_bucket.sql
\ir functions/uuid_bucket.sql
\ir functions/routed_id.sql
\ir functions/effect_envelope.sql
\ir functions/distribute.sql
\ir functions/distributed_alert_pending_types.sql
\ir functions/distributed_alert_watched_workflows.sql
\ir functions/distributed_alert_unsettled_runs.sql
\ir functions/distributed_sync_grants.sql
\ir functions/distributed_wrap_view.sql
\ir functions/claim_in_bucket.sql
\ir functions/purge_tombstones.sql
\ir functions/missing_secrets.sql
\ir functions/reset_circuit.sql
\ir functions/payload_hmac.sql
\ir functions/run_payload_hmac.sql
\ir functions/distribute_tombstones.sql

-- Views (they call functions above).
\ir views/key_history.sql
\ir views/approval_status.sql
\ir views/effect_types.sql
\ir views/effect_policies.sql
\ir views/cancel_windows.sql
\ir views/endpoint_health.sql
\ir views/dead_letter_summary.sql
\ir views/alert_instances.sql
\ir views/alerts.sql

-- What each bundle holds.
\ir bundles.sql
