
-- n8n request forms (SPEC §13, src/request_forms.c). Every function a
-- workflow calls also takes its whole request as ONE jsonb argument whose
-- fields are the typed arguments' names: n8n's Postgres node pastes query
-- parameters as literals and splits plain ones on commas, so the robust
-- call is SELECT * FROM idemgate.f($1::jsonb) with JSON.stringify({...}).
-- Same results, errors and bundle as the typed form; unknown field → 22023,
-- missing required field → 22004; single-row forms always give one row.

-- Each form is declared like its typed function (result, volatility, ROWS)
-- as SECURITY DEFINER with a pinned search_path, C symbol
-- idemgate_<name>_request, a comment naming its fields, and no EXECUTE for
-- PUBLIC. One row a form: name, RETURNS, volatility, ROWS (NULL: not a
-- set), fields, and what the comment adds. (CREATE EXTENSION replaces
-- MODULE_PATHNAME in the whole script, this block included. TAP 100
-- checks that a fresh install equals an updated one, pg_dump included.)
DO $forms$
DECLARE
    f record;
BEGIN
    FOR f IN
        SELECT * FROM (VALUES
            ('request_approval', 'TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)',
             'VOLATILE', 1, 'key, owner, version, effects, expires_in, card, audience, requested_by', ''),
            ('peek_approval', 'TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
                                     expires_at timestamptz, card jsonb, effects jsonb)',
             'STABLE', 1, 'token', '; always one row, status invalid (other columns NULL) for an unknown token'),
            ('consume_approval', 'TABLE(outcome text, idempotency_key text, effect_ids uuid[])',
             'VOLATILE', 1, 'token, decision, approver, reason', ''),
            ('enqueue_effect', 'TABLE(effect_ids uuid[], version bigint)',
             'VOLATILE', 1, 'key, owner, version, effects', ''),
            ('cas_transition', 'bigint', 'VOLATILE', NULL, 'key, owner, version, new_state, result', ''),
            ('renew_lease', 'timestamptz', 'VOLATILE', NULL, 'key, owner, version, extend_by', ''),
            ('fail', 'text', 'VOLATILE', NULL, 'key, owner, version, error_class, error, retryable', ''),
            ('record_validation', 'TABLE(valid boolean, errors jsonb, attempt integer)',
             'VOLATILE', 1, 'key, owner, version, output, schema', ''),
            ('claim_effects', 'TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
                                     payload jsonb, attempt integer, lease_owner uuid)',
             'VOLATILE', 10, 'effect_type, batch, lease', ''),
            ('complete_effect', 'boolean', 'VOLATILE', NULL, 'effect_id, owner, provider_id, status', ''),
            ('fail_effect', 'text', 'VOLATILE', NULL, 'effect_id, owner, error_class, error, retry_after, status', '')
        ) AS forms(name, result, volatility, nrows, fields, note)
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION idemgate.%I(request jsonb) RETURNS %s
             LANGUAGE C %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp %s
             AS %L, %L',
            f.name, f.result, f.volatility, 'ROWS ' || f.nrows,
            'MODULE_PATHNAME', 'idemgate_' || f.name || '_request');
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION idemgate.%I(jsonb) IS %L', f.name,
            pg_catalog.format('%s() with its %s in one JSON object {%s}: the form for n8n%s',
                              f.name,
                              CASE WHEN pg_catalog.strpos(f.fields, ',') > 0 THEN 'arguments' ELSE 'argument' END,
                              f.fields, f.note));
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION idemgate.%I(jsonb) FROM PUBLIC', f.name);
    END LOOP;
END
$forms$;

-- Each form joins its typed function's bundle, and operator (which holds
-- everything).
WITH forms(bundle, fn) AS (VALUES
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
    ('approver', 'idemgate.consume_approval(jsonb)'))
INSERT INTO idemgate.bundle_members (bundle, fn)
SELECT bundle, fn FROM forms
UNION ALL
SELECT 'operator', fn FROM forms;

-- Roles that already hold a bundle get its new members from 99_release_grants.sql
-- (which also skips roles dropped since, and keeps the grants out of pg_init_privs).
