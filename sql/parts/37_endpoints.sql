
-- Endpoints (src/endpoints.c): where the dispatcher delivers each effect
-- type. Headers can hold secrets: only the operator bundle may read the table.

CREATE FUNCTION idemgate.register_endpoint(effect_type text, url text,
                                           timeout interval DEFAULT '10 seconds',
                                           max_attempts integer DEFAULT 3,
                                           honors_idempotency_key boolean DEFAULT false,
                                           headers jsonb DEFAULT '{}',
                                           provider_id_field text DEFAULT 'id')
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_endpoint';
COMMENT ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text) IS
'Create or replace the HTTP endpoint of an effect type: https, or http only to hosts in idemgate.allowed_http_hosts; extra headers may not override Content-Type, Idempotency-Key, Host or Content-Length';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.endpoints');
