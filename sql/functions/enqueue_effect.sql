-- sql/functions/enqueue_effect.sql

CREATE OR REPLACE FUNCTION idemgate.enqueue_effect(key text, owner uuid, version bigint, effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect';
COMMENT ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) IS
'The automatic path: as the live owner of a processing run, insert its effects into the outbox and approve the run in one step; effect ids (existing ones for an already enqueued (key, type, target)) and the new version, or a row of NULLs when ownership was lost. Effect policies apply: 42501 for a type that requires approval; a call sampled for review moves the run to awaiting_human instead and returns no effect ids and review_requested = {approval_id, token, expires_at, effect_types, review_sample}';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(text,uuid,bigint,jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.enqueue_effect(request jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';
COMMENT ON FUNCTION idemgate.enqueue_effect(jsonb) IS
'enqueue_effect() with its arguments in one JSON object {key, owner, version, effects}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(jsonb) FROM PUBLIC;
