-- sql/functions/hold_sends_trigger.sql

-- The kill switch and type pauses as a send barrier (src/send_barrier.c):
-- a transaction that switches actions off or pauses a type makes every
-- dispatcher stop writing new requests before it commits. Row triggers,
-- so set_actions_enabled, pause_effect_type, a direct UPDATE and a
-- pg_dump restore are all covered.
CREATE OR REPLACE FUNCTION idemgate.hold_sends_trigger() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_hold_sends_trigger';
COMMENT ON FUNCTION idemgate.hold_sends_trigger() IS
'Trigger: the switch-off or pause being written holds every dispatcher''s new requests from its commit on (no first byte after the commit)';
REVOKE ALL ON FUNCTION idemgate.hold_sends_trigger() FROM PUBLIC;
