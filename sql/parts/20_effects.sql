
-- Effects and the automatic path (src/effects.c).

CREATE FUNCTION idemgate.enqueue_effect(key text, owner uuid, version bigint, effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect';
COMMENT ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) IS
'The automatic path: as the live owner of a processing run, insert its effects into the outbox and approve the run in one step; effect ids (existing ones for an already enqueued (key, type, target)) and the new version, or a row of NULLs when ownership was lost';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.enqueue_effect(text,uuid,bigint,jsonb)');
