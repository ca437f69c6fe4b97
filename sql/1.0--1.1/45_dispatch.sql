
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
