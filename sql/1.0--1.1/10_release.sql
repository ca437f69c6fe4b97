-- sql/1.0--1.1/10_release.sql — issue 8 (release and house).

-- events_claim_workflow_idx: 1.0 listed kind 'claimed', which no event row
-- has (a first claim writes no event; its time is runs.created_at). The
-- silence check (alert_instances' "watched" part, redefined in
-- 30_operations.sql) asks for the same two kinds, so the planner can still
-- prove the index's predicate from it.
DROP INDEX idemgate.events_claim_workflow_idx;
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate');
