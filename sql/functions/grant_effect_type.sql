-- sql/functions/grant_effect_type.sql

CREATE OR REPLACE FUNCTION idemgate.grant_effect_type(role regrole, effect_type text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_effect_type';
COMMENT ON FUNCTION idemgate.grant_effect_type(regrole, text) IS
'Let a role pull effects of one type with claim_effects / complete_effect / fail_effect (types without an endpoint; a type with an endpoint belongs to the dispatcher)';
REVOKE ALL ON FUNCTION idemgate.grant_effect_type(regrole,text) FROM PUBLIC;
