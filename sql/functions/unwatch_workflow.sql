-- sql/functions/unwatch_workflow.sql

CREATE OR REPLACE FUNCTION idemgate.unwatch_workflow(name text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_unwatch_workflow';
COMMENT ON FUNCTION idemgate.unwatch_workflow(text) IS
'Stop watching a workflow for silence; false when it was not watched';
REVOKE ALL ON FUNCTION idemgate.unwatch_workflow(text) FROM PUBLIC;
