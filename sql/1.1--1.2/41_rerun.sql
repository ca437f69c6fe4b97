-- sql/1.1--1.2/41_rerun.sql
--
-- Re-runs (src/rerun.c; README.md "Dead letters", docs/operations.md):
-- reinjecting a run's dead letter re-posts its stored input to the
-- workflow's re-run endpoint, through the outbox, when one is registered.
-- The endpoint is the one of effect type 'idemgate.rerun:' || workflow in
-- idemgate.endpoints (so pause_effect_type, unregister_endpoint, the
-- effect_types view and the stuck_effects alert work on it as on any
-- type); effect types beginning with 'idemgate.' are refused to callers.

CREATE FUNCTION idemgate.register_rerun(workflow text, url text,
                                        headers jsonb DEFAULT '{}',
                                        timeout interval DEFAULT '10 seconds')
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_rerun';
COMMENT ON FUNCTION idemgate.register_rerun(text, text, jsonb, interval) IS
'Create or replace the re-run endpoint of a workflow: reinjecting one of its runs'' dead letters then POSTs the run''s stored input (as the body, with an Idempotency-Key) there through the outbox, as an effect of type idemgate.rerun:<workflow>. URL checked like register_endpoint''s; audited; remove it with unregister_endpoint(''idemgate.rerun:'' || workflow, actor)';
REVOKE ALL ON FUNCTION idemgate.register_rerun(text, text, jsonb, interval) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.register_rerun(text,text,jsonb,interval)');
