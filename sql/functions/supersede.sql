-- sql/functions/supersede.sql

CREATE OR REPLACE FUNCTION idemgate.supersede(original_key text, new_key text, payload jsonb, operator text,
                                              reason text, lease interval DEFAULT '5 minutes')
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_supersede';
COMMENT ON FUNCTION idemgate.supersede(text, text, jsonb, text, text, interval) IS
'Replay a finished run under a new key linked to the original, recording operator and reason; the original is never modified';
REVOKE ALL ON FUNCTION idemgate.supersede(text,text,jsonb,text,text,interval) FROM PUBLIC;
