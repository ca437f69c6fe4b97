
-- Dead letters and reinjection (src/deadletters.c).

-- An effect's dead letter also keeps its target, so the full effect
-- (type, target, payload) survives even if the outbox row is purged.
ALTER TABLE idemgate.dead_letters ADD COLUMN target text;
COMMENT ON COLUMN idemgate.dead_letters.target IS 'For effect dead letters: the effect''s target (payload holds the effect''s payload)';

CREATE FUNCTION idemgate.reinject(id bigint, actor text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject';
COMMENT ON FUNCTION idemgate.reinject(bigint, text) IS
'Reinject a dead letter once: an effect goes back to pending (attempts reset, same effect_id and key), a run to failed_retryable; false when already reinjected, IG003 for an unknown id';

CREATE FUNCTION idemgate.reinject_all(actor text, effect_type text DEFAULT NULL,
                                      since timestamptz DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject_all';
COMMENT ON FUNCTION idemgate.reinject_all(text, text, timestamptz) IS
'Reinject every open dead letter (only effects of effect_type when given, only those dead since since when given); returns how many';

CREATE FUNCTION idemgate.resolve_effect(effect_id uuid, delivered boolean, actor text,
                                        provider_id text DEFAULT NULL, note text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resolve_effect';
COMMENT ON FUNCTION idemgate.resolve_effect(uuid, boolean, text, text, text) IS
'Settle an unknown effect after checking with the provider: delivered → completed, not delivered → pending (sent again); IG002 unless unknown';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.reinject(bigint,text)'),
    ('operator', 'idemgate.reinject_all(text,text,timestamptz)'),
    ('operator', 'idemgate.resolve_effect(uuid,boolean,text,text,text)');
