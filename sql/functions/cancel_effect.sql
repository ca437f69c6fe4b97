-- sql/functions/cancel_effect.sql

CREATE OR REPLACE FUNCTION idemgate.cancel_effect(effect_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_effect';
COMMENT ON FUNCTION idemgate.cancel_effect(uuid, text, text) IS
'Cancel a pending or unknown effect: state cancelled, never sent afterwards, no dead letter; the run completes when its other effects are settled. IG002 from any other state, IG003 for an unknown effect';
REVOKE ALL ON FUNCTION idemgate.cancel_effect(uuid,text,text) FROM PUBLIC;
