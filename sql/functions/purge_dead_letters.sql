-- sql/functions/purge_dead_letters.sql

CREATE OR REPLACE FUNCTION idemgate.purge_dead_letters(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge_dead_letters';
COMMENT ON FUNCTION idemgate.purge_dead_letters(interval) IS
'Delete dead letters (open or reinjected) that died more than older_than ago, with the full payloads they hold; their runs become purgeable. Returns how many were deleted';
REVOKE ALL ON FUNCTION idemgate.purge_dead_letters(interval) FROM PUBLIC;
