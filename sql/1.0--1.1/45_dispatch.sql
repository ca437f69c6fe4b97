
-- ---------------------------------------------------------------------------
-- 45_dispatch.sql — the dispatcher parts of issues 10 and 11 (SPEC §14, §15).
-- ---------------------------------------------------------------------------

-- The kill switch and type pauses as a send barrier (src/send_barrier.c):
-- a transaction that switches actions off or pauses a type makes every
-- dispatcher stop writing new requests before it commits. Row triggers,
-- so set_actions_enabled, pause_effect_type, a direct UPDATE and a
-- pg_dump restore are all covered.
CREATE FUNCTION idemgate.hold_sends_trigger() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_hold_sends_trigger';
COMMENT ON FUNCTION idemgate.hold_sends_trigger() IS
'Trigger: the switch-off or pause being written holds every dispatcher''s new requests from its commit on (no first byte after the commit)';
REVOKE ALL ON FUNCTION idemgate.hold_sends_trigger() FROM PUBLIC;
CREATE TRIGGER hold_sends_on_switch_off AFTER INSERT OR UPDATE ON idemgate.control
FOR EACH ROW WHEN (NOT NEW.actions_enabled) EXECUTE FUNCTION idemgate.hold_sends_trigger();
CREATE TRIGGER hold_sends_on_pause AFTER INSERT OR UPDATE ON idemgate.paused_effect_types
FOR EACH ROW EXECUTE FUNCTION idemgate.hold_sends_trigger();

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.hold_sends_trigger()');

-- Per-endpoint limits (SPEC §14, src/rate_limit.c): register_endpoint gains
-- rate_limit (requests per second) and max_in_flight (concurrent requests
-- to this endpoint); NULL = none / the global idemgate.max_in_flight. The
-- dispatchers keep them together (shared memory).
ALTER TABLE idemgate.endpoints
    ADD COLUMN rate_limit double precision,
    ADD COLUMN max_in_flight integer;
COMMENT ON COLUMN idemgate.endpoints.rate_limit IS
'Most requests per second to this endpoint (over any one-second window), NULL = no limit';
COMMENT ON COLUMN idemgate.endpoints.max_in_flight IS
'Most concurrent requests to this endpoint, NULL = only the global idemgate.max_in_flight';

DROP FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text);
CREATE FUNCTION idemgate.register_endpoint(effect_type text, url text,
                                           timeout interval DEFAULT '10 seconds',
                                           max_attempts integer DEFAULT 3,
                                           honors_idempotency_key boolean DEFAULT false,
                                           headers jsonb DEFAULT '{}',
                                           provider_id_field text DEFAULT 'id',
                                           rate_limit double precision DEFAULT NULL,
                                           max_in_flight integer DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_endpoint';
COMMENT ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer) IS
'Create or replace the HTTP endpoint of an effect type: https, or http only to hosts in idemgate.allowed_http_hosts; extra headers may not override Content-Type, Idempotency-Key, Host or Content-Length; rate_limit (requests/s) and max_in_flight (concurrent requests) limit what the dispatchers send to it';
REVOKE ALL ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text, double precision, integer) FROM PUBLIC;
UPDATE idemgate.bundle_members
   SET fn = 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text,double precision,integer)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text)';
