-- sql/functions/purge_tombstones.sql

CREATE OR REPLACE FUNCTION idemgate.purge_tombstones(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge_tombstones';
COMMENT ON FUNCTION idemgate.purge_tombstones(interval) IS
'Delete the tombstones of runs purged more than older_than ago (a claim of such a key is claimed as new again); returns how many. purge() already deletes those older than idemgate.tombstone_retention';
REVOKE ALL ON FUNCTION idemgate.purge_tombstones(interval) FROM PUBLIC;
