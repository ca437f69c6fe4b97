-- sql/functions/cas_transition.sql

CREATE OR REPLACE FUNCTION idemgate.cas_transition(key text, owner uuid, version bigint, new_state text,
                                                   result jsonb DEFAULT NULL) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cas_transition';
COMMENT ON FUNCTION idemgate.cas_transition(text, uuid, bigint, text, jsonb) IS
'Compare-and-set a run''s state as its live lease owner; returns the new version, NULL when ownership was lost, IG002 for an illegal transition';
REVOKE ALL ON FUNCTION idemgate.cas_transition(text,uuid,bigint,text,jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.cas_transition(request jsonb)
RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cas_transition_request';
COMMENT ON FUNCTION idemgate.cas_transition(jsonb) IS
'cas_transition() with its arguments in one JSON object {key, owner, version, new_state, result}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.cas_transition(jsonb) FROM PUBLIC;
