-- sql/tables/paused_effect_types.sql

-- Paused effect types (src/effect_types.c). THE PAUSE TABLE IS
-- idemgate.paused_effect_types: a type is paused while it has a row here.
-- claim_effects and the dispatcher's claim statement skip paused types;
-- the dispatcher's send-time barrier (45_dispatch.sql, src/dispatcher.c)
-- reads the same table (or EffectTypePaused() in src/effect_types.h).
CREATE TABLE idemgate.paused_effect_types (
    effect_type text PRIMARY KEY,
    paused_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    paused_by   text NOT NULL,
    reason      text NOT NULL
);

COMMENT ON TABLE idemgate.paused_effect_types IS
'Effect types held by pause_effect_type: neither the dispatcher nor claim_effects takes their effects until resume_effect_type';

SELECT pg_catalog.pg_extension_config_dump('idemgate.paused_effect_types', '');

CREATE TRIGGER hold_sends_on_pause AFTER INSERT OR UPDATE ON idemgate.paused_effect_types
FOR EACH ROW EXECUTE FUNCTION idemgate.hold_sends_trigger();

REVOKE ALL ON idemgate.paused_effect_types FROM PUBLIC;
