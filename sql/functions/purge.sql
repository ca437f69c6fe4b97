-- sql/functions/purge.sql

CREATE OR REPLACE FUNCTION idemgate.purge(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge';
COMMENT ON FUNCTION idemgate.purge(interval) IS
'Delete completed and failed_terminal runs last changed more than older_than ago, with their approvals, effects, reinjected dead letters and events; runs with an open dead letter or an unsettled effect are kept. Returns the number of runs deleted';
REVOKE ALL ON FUNCTION idemgate.purge(interval) FROM PUBLIC;
