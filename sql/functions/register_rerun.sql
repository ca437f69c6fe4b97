-- sql/functions/register_rerun.sql

CREATE OR REPLACE FUNCTION idemgate.register_rerun(workflow text, url text,
                                                   headers jsonb DEFAULT '{}',
                                                   timeout interval DEFAULT '10 seconds')
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_rerun';
COMMENT ON FUNCTION idemgate.register_rerun(text, text, jsonb, interval) IS
'Create or replace the re-run endpoint of a workflow: reinjecting one of its runs'' dead letters then POSTs the run''s stored input (as the body, with an Idempotency-Key) there through the outbox, as an effect of type idemgate.rerun:<workflow>. URL checked like register_endpoint''s; audited; remove it with unregister_endpoint(''idemgate.rerun:'' || workflow, actor)';
REVOKE ALL ON FUNCTION idemgate.register_rerun(text,text,jsonb,interval) FROM PUBLIC;
