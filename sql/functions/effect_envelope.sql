-- sql/functions/effect_envelope.sql

-- The dispatcher's request body (src/outbox_dispatch.c): immutable, so
-- that its claim runs on Citus as on a single node.
CREATE OR REPLACE FUNCTION idemgate.effect_envelope(effect_id uuid, idempotency_key text, effect_type text,
                                                    target text, payload jsonb, attempt integer) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_effect_envelope';
COMMENT ON FUNCTION idemgate.effect_envelope(uuid, text, text, text, jsonb, integer) IS
'The body the dispatcher posts: {effect_id, idempotency_key, effect_type, target, payload, attempt} as jsonb text';
REVOKE ALL ON FUNCTION idemgate.effect_envelope(uuid,text,text,text,jsonb,integer) FROM PUBLIC;
