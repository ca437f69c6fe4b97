-- sql/functions/resolve_effect.sql

CREATE OR REPLACE FUNCTION idemgate.resolve_effect(effect_id uuid, delivered boolean, actor text,
                                                   provider_id text DEFAULT NULL, note text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resolve_effect';
COMMENT ON FUNCTION idemgate.resolve_effect(uuid, boolean, text, text, text) IS
'Settle an unknown effect after checking with the provider: delivered → completed, not delivered → pending (sent again); IG002 unless unknown';
REVOKE ALL ON FUNCTION idemgate.resolve_effect(uuid,boolean,text,text,text) FROM PUBLIC;
