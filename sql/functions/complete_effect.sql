-- sql/functions/complete_effect.sql

CREATE OR REPLACE FUNCTION idemgate.complete_effect(effect_id uuid, owner uuid, provider_id text DEFAULT NULL,
                                                    status integer DEFAULT NULL)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_effect';
COMMENT ON FUNCTION idemgate.complete_effect(uuid, uuid, text, integer) IS
'Mark a sending effect completed if owner still holds its lease (provider id and HTTP status stored); completes the run with its last effect; false when the lease was lost';
REVOKE ALL ON FUNCTION idemgate.complete_effect(uuid,uuid,text,integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.complete_effect(request jsonb)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_effect_request';
COMMENT ON FUNCTION idemgate.complete_effect(jsonb) IS
'complete_effect() with its arguments in one JSON object {effect_id, owner, provider_id, status}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.complete_effect(jsonb) FROM PUBLIC;
