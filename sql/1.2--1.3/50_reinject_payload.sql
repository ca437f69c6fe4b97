-- sql/1.2--1.3/50_reinject_payload.sql — reinject(id, actor, payload):
-- "un payload mal formado sigue mal formado". An effect the provider
-- refused (rejected: it never acted) can be sent again with a corrected
-- payload as a new effect: a new effect_id, so a new Idempotency-Key,
-- whose replaces column names the failed one (src/operations/reinject.c). The
-- function gains an argument, so it is made again; roles holding the
-- operator bundle get EXECUTE back in 99_release_grants.sql.
ALTER TABLE idemgate.outbox ADD COLUMN replaces uuid;
COMMENT ON COLUMN idemgate.outbox.replaces IS
'The effect_id of the rejected effect this one replaces with a corrected payload (reinject with a payload); NULL otherwise';

DROP FUNCTION idemgate.reinject(bigint, text);
\ir ../functions/reinject.sql
UPDATE idemgate.bundle_members SET fn = 'idemgate.reinject(bigint,text,jsonb)'
 WHERE fn = 'idemgate.reinject(bigint,text)';
