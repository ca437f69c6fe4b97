-- sql/1.1--1.2/05_request_forms.sql
--
-- The jsonb forms for n8n, written out one by one so that a search for a
-- function's name finds its form (1.1 created them in a loop). Each
-- definition is exactly what 1.1 created: CREATE OR REPLACE keeps its
-- comment, owner, grants and bundle membership, and a fresh install runs
-- this file too. The C side is src/request_forms.c.

CREATE OR REPLACE FUNCTION idemgate.request_approval(request jsonb) RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_request_approval_request';

CREATE OR REPLACE FUNCTION idemgate.peek_approval(request jsonb) RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
                 expires_at timestamptz, card jsonb, effects jsonb)
    LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_peek_approval_request';

CREATE OR REPLACE FUNCTION idemgate.consume_approval(request jsonb) RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_consume_approval_request';

CREATE OR REPLACE FUNCTION idemgate.enqueue_effect(request jsonb) RETURNS TABLE(effect_ids uuid[], version bigint)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';

CREATE OR REPLACE FUNCTION idemgate.cas_transition(request jsonb) RETURNS bigint
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_cas_transition_request';

CREATE OR REPLACE FUNCTION idemgate.renew_lease(request jsonb) RETURNS timestamptz
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_renew_lease_request';

CREATE OR REPLACE FUNCTION idemgate.fail(request jsonb) RETURNS text
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_fail_request';

CREATE OR REPLACE FUNCTION idemgate.record_validation(request jsonb) RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_record_validation_request';

CREATE OR REPLACE FUNCTION idemgate.claim_effects(request jsonb) RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
                 payload jsonb, attempt integer, lease_owner uuid)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10
    AS 'MODULE_PATHNAME', 'idemgate_claim_effects_request';

CREATE OR REPLACE FUNCTION idemgate.complete_effect(request jsonb) RETURNS boolean
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_complete_effect_request';

CREATE OR REPLACE FUNCTION idemgate.fail_effect(request jsonb) RETURNS text
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_fail_effect_request';
