-- sql/functions/claim.sql

CREATE OR REPLACE FUNCTION idemgate.claim(request jsonb)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_request';
COMMENT ON FUNCTION idemgate.claim(jsonb) IS
'claim() with its arguments in one JSON object {key, payload, lease, workflow, owner, origin}: the robust form for n8n''s Postgres node';
REVOKE ALL ON FUNCTION idemgate.claim(jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.claim(key text, payload jsonb, lease interval DEFAULT '5 minutes',
                                          workflow text DEFAULT NULL, owner uuid DEFAULT NULL,
                                          origin text DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim';
COMMENT ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid, text) IS
'Atomically claim an idempotency key: claimed (new key), recovered (retryable or expired lease taken over) or duplicate (earlier state and result); IG001 when the payload differs. origin (where the trigger came from) is kept on the run and in the recovered and duplicate events';
REVOKE ALL ON FUNCTION idemgate.claim(text,jsonb,interval,text,uuid,text) FROM PUBLIC;
