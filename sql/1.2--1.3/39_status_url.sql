-- sql/1.2--1.3/39_status_url.sql — reconciliation of unknown effects
-- (SPEC §22; src/policy/status_url.c, src/outbox/outbox_lookups.c; docs/dispatcher.md,
-- "Reconciliation"): an endpoint may name where its provider answers a
-- status look-up, a URL template with {effect_id} (the Idempotency-Key
-- the effect was sent with) and optionally {provider_id}. The dispatcher
-- reads it with GET for each unknown effect of the type: 2xx → completed,
-- 404 → pending (sent again with the same key), anything else → still
-- unknown, asked again after a backoff (status_checks counts the asks).
-- register_endpoint gains the argument, so it is made again; roles holding
-- the operator bundle get EXECUTE back in 99_release_grants.sql.
ALTER TABLE idemgate.endpoints ADD COLUMN status_url text;
COMMENT ON COLUMN idemgate.endpoints.status_url IS
'Where the provider answers a status look-up of an unknown effect (GET, a template with {effect_id} and optionally {provider_id}); NULL: unknown effects wait for resolve_effect';
ALTER TABLE idemgate.outbox ADD COLUMN status_checks integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN idemgate.outbox.status_checks IS
'Status look-ups of this unknown effect that left it unknown (the next waits 10 s × 2^status_checks, at most an hour)';

DROP FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer);
\ir ../functions/register_endpoint.sql
UPDATE idemgate.bundle_members
   SET fn = 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer,text)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer)';
