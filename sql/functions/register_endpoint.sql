-- sql/functions/register_endpoint.sql

CREATE OR REPLACE FUNCTION idemgate.register_endpoint(effect_type text, url text,
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
REVOKE ALL ON FUNCTION idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer,text) FROM PUBLIC;
