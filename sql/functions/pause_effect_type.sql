-- sql/functions/pause_effect_type.sql

CREATE OR REPLACE FUNCTION idemgate.pause_effect_type(effect_type text, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_pause_effect_type';
COMMENT ON FUNCTION idemgate.pause_effect_type(text, text, text) IS
'Hold every effect of one type (like the kill switch, for one type): not claimed by the dispatcher nor by claim_effects until resume_effect_type; audited with actor and reason; IG003 for a type with no effects, endpoint or pause';
REVOKE ALL ON FUNCTION idemgate.pause_effect_type(text,text,text) FROM PUBLIC;
