-- sql/1.2--1.3/40_alerts.sql — the alerts of 1.2 plus
--   terminal_failure  also the runs that ended with a failed effect
--                     (sql/1.2--1.3/20_failed_runs.sql), at once, by key;
--   approvals_waiting per workflow: approvals undecided for longer than
--                     idemgate.alert_approval_wait (4 hours), naming the
--                     first keys and the audience of the oldest: nobody
--                     owns the decision (docs/operations.md, "Alerts").
\ir ../views/alert_instances.sql

\ir ../views/alerts.sql
