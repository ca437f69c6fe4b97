-- sql/1.2--1.3/40_alerts.sql — the alerts of 1.2 plus
--   terminal_failure  also the runs that ended with a failed effect
--                     (sql/1.2--1.3/20_failed_runs.sql), at once, by key;
--   approvals_waiting per workflow: approvals undecided for longer than
--                     idemgate.alert_approval_wait (4 hours), naming the
--                     first keys and the audience of the oldest: nobody
--                     owns the decision (docs/operations.md, "Alerts").
\ir ../views/alert_instances.sql

COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type, workflow or database: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval), stuck_effects (due pending effects older than idemgate.alert_stuck_after), dispatcher_missing (HTTP effects due where no dispatcher runs), kill_switch_off and type_paused (info), stalled_runs (runs processing with an expired lease or failed_retryable for longer than idemgate.alert_stalled_after), terminal_failure (runs failed for good in the last hour, also by a failed effect), lease_takeovers (more than idemgate.alert_lease_takeovers takeovers of expired leases in 10 minutes), payload_mismatch (claims refused with IG001 in the last hour), unsettled_runs (runs approved with all their effects settled for longer than a minute, not ended), approvals_waiting (approvals undecided for longer than idemgate.alert_approval_wait), secret_missing (an endpoint names a secret idemgate.secrets_file lacks: its effects are held), endpoint_down (an endpoint''s circuit is open: its effects wait for a probe to succeed); messages name the workflow and the first keys';
