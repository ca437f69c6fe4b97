
-- Retention (src/retention.c): finished work is purged, open dead letters stay
-- until an operator purges them.

CREATE FUNCTION idemgate.purge(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge';
COMMENT ON FUNCTION idemgate.purge(interval) IS
'Delete completed and failed_terminal runs last changed more than older_than ago, with their approvals, effects, reinjected dead letters and events; runs with an open dead letter or an unsettled effect are kept. Returns the number of runs deleted';

CREATE FUNCTION idemgate.purge_dead_letters(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge_dead_letters';
COMMENT ON FUNCTION idemgate.purge_dead_letters(interval) IS
'Delete dead letters (open or reinjected) that died more than older_than ago, with the full payloads they hold; their runs become purgeable. Returns how many were deleted';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.purge(interval)'),
    ('operator', 'idemgate.purge_dead_letters(interval)');
