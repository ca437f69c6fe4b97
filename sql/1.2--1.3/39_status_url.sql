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
CREATE FUNCTION idemgate.register_endpoint(effect_type text, url text,
                                           timeout interval DEFAULT '10 seconds',
                                           max_attempts integer DEFAULT 3,
                                           honors_idempotency_key boolean DEFAULT false,
                                           headers jsonb DEFAULT '{}',
                                           provider_id_field text DEFAULT 'id',
                                           rate_limit double precision DEFAULT NULL,
                                           max_in_flight integer DEFAULT NULL,
                                           status_url text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_endpoint';
COMMENT ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer, text) IS
'Create or replace the HTTP endpoint of an effect type: https, or http only to hosts in idemgate.allowed_http_hosts; extra headers may not override Content-Type, Idempotency-Key, Host or Content-Length, and may name secrets (${secret:name}); rate_limit (requests/s) and max_in_flight (concurrent requests) limit what the dispatchers send to it; status_url (with {effect_id}, optionally {provider_id}; the same rules as url) is read with GET to reconcile unknown effects';
REVOKE ALL ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer, text) FROM PUBLIC;
UPDATE idemgate.bundle_members
   SET fn = 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer,text)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer)';
