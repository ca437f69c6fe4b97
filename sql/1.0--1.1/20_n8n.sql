
-- n8n request forms (SPEC §13, src/request_forms.c). Every function a
-- workflow calls also takes its whole request as ONE jsonb argument whose
-- fields are the typed arguments' names: n8n's Postgres node pastes query
-- parameters as literals and splits plain ones on commas, so the robust
-- call is SELECT * FROM idemgate.f($1::jsonb) with JSON.stringify({...}).
-- Same results, errors and bundle as the typed form; unknown field → 22023,
-- missing required field → 22004; single-row forms always give one row.

CREATE FUNCTION idemgate.request_approval(request jsonb)
RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_request_approval_request';
COMMENT ON FUNCTION idemgate.request_approval(jsonb) IS
'request_approval() with its arguments in one JSON object {key, owner, version, effects, expires_in, card, audience, requested_by}: the form for n8n';

CREATE FUNCTION idemgate.peek_approval(request jsonb)
RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
              expires_at timestamptz, card jsonb, effects jsonb)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_peek_approval_request';
COMMENT ON FUNCTION idemgate.peek_approval(jsonb) IS
'peek_approval() with its argument in one JSON object {token}: the form for n8n; always one row, status invalid (other columns NULL) for an unknown token';

CREATE FUNCTION idemgate.consume_approval(request jsonb)
RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_consume_approval_request';
COMMENT ON FUNCTION idemgate.consume_approval(jsonb) IS
'consume_approval() with its arguments in one JSON object {token, decision, approver, reason}: the form for n8n';

CREATE FUNCTION idemgate.enqueue_effect(request jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';
COMMENT ON FUNCTION idemgate.enqueue_effect(jsonb) IS
'enqueue_effect() with its arguments in one JSON object {key, owner, version, effects}: the form for n8n';

CREATE FUNCTION idemgate.cas_transition(request jsonb) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cas_transition_request';
COMMENT ON FUNCTION idemgate.cas_transition(jsonb) IS
'cas_transition() with its arguments in one JSON object {key, owner, version, new_state, result}: the form for n8n';

CREATE FUNCTION idemgate.renew_lease(request jsonb) RETURNS timestamptz
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_renew_lease_request';
COMMENT ON FUNCTION idemgate.renew_lease(jsonb) IS
'renew_lease() with its arguments in one JSON object {key, owner, version, extend_by}: the form for n8n';

CREATE FUNCTION idemgate.fail(request jsonb) RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_request';
COMMENT ON FUNCTION idemgate.fail(jsonb) IS
'fail() with its arguments in one JSON object {key, owner, version, error_class, error, retryable}: the form for n8n';

CREATE FUNCTION idemgate.record_validation(request jsonb)
RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_record_validation_request';
COMMENT ON FUNCTION idemgate.record_validation(jsonb) IS
'record_validation() with its arguments in one JSON object {key, owner, version, output, schema}: the form for n8n';

CREATE FUNCTION idemgate.claim_effects(request jsonb)
RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
              payload jsonb, attempt integer, lease_owner uuid)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 10 AS 'MODULE_PATHNAME', 'idemgate_claim_effects_request';
COMMENT ON FUNCTION idemgate.claim_effects(jsonb) IS
'claim_effects() with its arguments in one JSON object {effect_type, batch, lease}: the form for n8n';

CREATE FUNCTION idemgate.complete_effect(request jsonb) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_effect_request';
COMMENT ON FUNCTION idemgate.complete_effect(jsonb) IS
'complete_effect() with its arguments in one JSON object {effect_id, owner, provider_id, status}: the form for n8n';

CREATE FUNCTION idemgate.fail_effect(request jsonb) RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_effect_request';
COMMENT ON FUNCTION idemgate.fail_effect(jsonb) IS
'fail_effect() with its arguments in one JSON object {effect_id, owner, error_class, error, retry_after, status}: the form for n8n';

REVOKE EXECUTE ON FUNCTION
    idemgate.request_approval(jsonb), idemgate.peek_approval(jsonb),
    idemgate.consume_approval(jsonb), idemgate.enqueue_effect(jsonb),
    idemgate.cas_transition(jsonb), idemgate.renew_lease(jsonb), idemgate.fail(jsonb),
    idemgate.record_validation(jsonb), idemgate.claim_effects(jsonb),
    idemgate.complete_effect(jsonb), idemgate.fail_effect(jsonb)
FROM PUBLIC;

-- Each form joins its typed function's bundle, and operator (which holds
-- everything).
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.request_approval(jsonb)'),
    ('client', 'idemgate.enqueue_effect(jsonb)'),
    ('client', 'idemgate.cas_transition(jsonb)'),
    ('client', 'idemgate.renew_lease(jsonb)'),
    ('client', 'idemgate.fail(jsonb)'),
    ('client', 'idemgate.record_validation(jsonb)'),
    ('client', 'idemgate.claim_effects(jsonb)'),
    ('client', 'idemgate.complete_effect(jsonb)'),
    ('client', 'idemgate.fail_effect(jsonb)'),
    ('approver', 'idemgate.peek_approval(jsonb)'),
    ('approver', 'idemgate.consume_approval(jsonb)'),
    ('operator', 'idemgate.request_approval(jsonb)'),
    ('operator', 'idemgate.enqueue_effect(jsonb)'),
    ('operator', 'idemgate.cas_transition(jsonb)'),
    ('operator', 'idemgate.renew_lease(jsonb)'),
    ('operator', 'idemgate.fail(jsonb)'),
    ('operator', 'idemgate.record_validation(jsonb)'),
    ('operator', 'idemgate.claim_effects(jsonb)'),
    ('operator', 'idemgate.complete_effect(jsonb)'),
    ('operator', 'idemgate.fail_effect(jsonb)'),
    ('operator', 'idemgate.peek_approval(jsonb)'),
    ('operator', 'idemgate.consume_approval(jsonb)');

-- Roles that already hold a bundle get its new members from 99_release_grants.sql
-- (which also skips roles dropped since, and keeps the grants out of pg_init_privs).
