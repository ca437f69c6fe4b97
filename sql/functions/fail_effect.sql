-- sql/functions/fail_effect.sql

CREATE OR REPLACE FUNCTION idemgate.fail_effect(effect_id uuid, owner uuid, error_class text,
                                                error text DEFAULT NULL, retry_after interval DEFAULT NULL,
                                                status integer DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_effect';
COMMENT ON FUNCTION idemgate.fail_effect(uuid, uuid, text, text, interval, integer) IS
'Record a failed attempt of a sending effect: pending with backoff (transport, rate_limited, unavailable), unknown (timeout_after_send, server_error; retryable when the endpoint honours the key), failed + dead letter (rejected, or attempts exhausted); NULL when the lease was lost';
REVOKE ALL ON FUNCTION idemgate.fail_effect(uuid,uuid,text,text,interval,integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.fail_effect(request jsonb)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_effect_request';
COMMENT ON FUNCTION idemgate.fail_effect(jsonb) IS
'fail_effect() with its arguments in one JSON object {effect_id, owner, error_class, error, retry_after, status}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.fail_effect(jsonb) FROM PUBLIC;
