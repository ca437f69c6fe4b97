-- sql/functions/watch_workflow.sql

CREATE OR REPLACE FUNCTION idemgate.watch_workflow(name text, expected_interval interval) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_watch_workflow';
COMMENT ON FUNCTION idemgate.watch_workflow(text, interval) IS
'Watch a workflow for silence (upsert): the silence alert fires when it has not been claimed for more than twice expected_interval';
REVOKE ALL ON FUNCTION idemgate.watch_workflow(text,interval) FROM PUBLIC;
