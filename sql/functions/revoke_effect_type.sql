-- sql/functions/revoke_effect_type.sql

CREATE OR REPLACE FUNCTION idemgate.revoke_effect_type(role regrole, effect_type text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_effect_type';
COMMENT ON FUNCTION idemgate.revoke_effect_type(regrole, text) IS
'Stop a role pulling effects of one type; false when it had no such grant';
REVOKE ALL ON FUNCTION idemgate.revoke_effect_type(regrole,text) FROM PUBLIC;
