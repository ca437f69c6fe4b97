-- sql/functions/unregister_endpoint.sql

CREATE OR REPLACE FUNCTION idemgate.unregister_endpoint(effect_type text, actor text)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_unregister_endpoint';
COMMENT ON FUNCTION idemgate.unregister_endpoint(text, text) IS
'Remove the HTTP endpoint of an effect type (audited); its pending effects then wait for claim_effects or a new endpoint. False when none was registered';
REVOKE ALL ON FUNCTION idemgate.unregister_endpoint(text,text) FROM PUBLIC;
