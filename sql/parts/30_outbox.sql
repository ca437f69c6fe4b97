
-- Outbox pull API (src/outbox.c): external workers (an n8n schedule, a
-- script) claim due effects, send them with their own nodes, and record the
-- outcome. The dispatcher records outcomes through the same C code.

CREATE FUNCTION idemgate.claim_effects(effect_type text, batch integer DEFAULT 10,
                                       lease interval DEFAULT '1 minute')
RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
              payload jsonb, attempt integer, lease_owner uuid)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 10 AS 'MODULE_PATHNAME', 'idemgate_claim_effects';
COMMENT ON FUNCTION idemgate.claim_effects(text, integer, interval) IS
'Claim up to batch due pending effects of approved runs (FOR UPDATE SKIP LOCKED), marking them sending under one fresh lease owner; settles expired leases of the type first; returns nothing while the kill switch is off';

CREATE FUNCTION idemgate.complete_effect(effect_id uuid, owner uuid, provider_id text DEFAULT NULL,
                                         status integer DEFAULT NULL)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_effect';
COMMENT ON FUNCTION idemgate.complete_effect(uuid, uuid, text, integer) IS
'Mark a sending effect completed if owner still holds its lease (provider id and HTTP status stored); completes the run with its last effect; false when the lease was lost';

CREATE FUNCTION idemgate.fail_effect(effect_id uuid, owner uuid, error_class text,
                                     error text DEFAULT NULL, retry_after interval DEFAULT NULL,
                                     status integer DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_effect';
COMMENT ON FUNCTION idemgate.fail_effect(uuid, uuid, text, text, interval, integer) IS
'Record a failed attempt of a sending effect: pending with backoff (transport, rate_limited, unavailable), unknown (timeout_after_send, server_error; retryable when the endpoint honours the key), failed + dead letter (rejected, or attempts exhausted); NULL when the lease was lost';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.claim_effects(text,integer,interval)'),
    ('client', 'idemgate.complete_effect(uuid,uuid,text,integer)'),
    ('client', 'idemgate.fail_effect(uuid,uuid,text,text,interval,integer)');
