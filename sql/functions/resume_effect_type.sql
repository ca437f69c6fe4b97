-- sql/functions/resume_effect_type.sql

CREATE OR REPLACE FUNCTION idemgate.resume_effect_type(effect_type text, actor text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resume_effect_type';
COMMENT ON FUNCTION idemgate.resume_effect_type(text, text) IS
'End the pause of an effect type: its held effects go out again; audited; IG003 for a type with no effects, endpoint or pause';
REVOKE ALL ON FUNCTION idemgate.resume_effect_type(text,text) FROM PUBLIC;
