-- sql/functions/claim_effects.sql

CREATE OR REPLACE FUNCTION idemgate.claim_effects(effect_type text, batch integer DEFAULT 10,
                                                  lease interval DEFAULT '1 minute')
RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
              payload jsonb, attempt integer, lease_owner uuid)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 10 AS 'MODULE_PATHNAME', 'idemgate_claim_effects';
COMMENT ON FUNCTION idemgate.claim_effects(text, integer, interval) IS
'Claim up to batch due pending effects of approved runs (FOR UPDATE SKIP LOCKED), marking them sending under one fresh lease owner; settles expired leases of the type first; returns nothing while the kill switch is off';
REVOKE ALL ON FUNCTION idemgate.claim_effects(text,integer,interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.claim_effects(request jsonb)
RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text, payload jsonb, attempt integer, lease_owner uuid)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 10 AS 'MODULE_PATHNAME', 'idemgate_claim_effects_request';
COMMENT ON FUNCTION idemgate.claim_effects(jsonb) IS
'claim_effects() with its arguments in one JSON object {effect_type, batch, lease}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.claim_effects(jsonb) FROM PUBLIC;
