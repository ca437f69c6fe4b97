-- sql/functions/complete_settled_runs.sql

-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION idemgate.complete_settled_runs(max_runs integer DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_settled_runs';
COMMENT ON FUNCTION idemgate.complete_settled_runs(integer) IS
'Complete the approved runs none of whose effects is in another state than completed or cancelled (each locked, SKIP LOCKED, and checked again after the lock), as their last effect should have; returns how many. max_runs NULL looks at every approved run; a number (1..100000) looks at that many, continuing where the previous call of this session stopped. The dispatcher calls it every second; call it where no dispatcher serves the database';
REVOKE ALL ON FUNCTION idemgate.complete_settled_runs(integer) FROM PUBLIC;
