-- request_forms (SPEC §13): the one-jsonb-argument form of every function a
-- workflow calls. Each is driven the way n8n's Postgres node calls it (one
-- parameter, JSON.stringify of the arguments, bigint values as strings)
-- and compared with the typed form: same results, same errors, same
-- bundles; unknown field → 22023, missing required field → 22004, wrong
-- type → 22023, each naming the field; single-row forms give one row.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
CREATE FUNCTION pg_temp.code_of(q text) RETURNS text LANGUAGE sql AS $$
  SELECT left(pg_temp.sqlstate_of(q), 5) $$;
-- rows_of(q) counts the rows q returns.
CREATE FUNCTION pg_temp.rows_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN EXECUTE 'SELECT count(*) FROM (' || q || ') x' INTO n; RETURN n; END $$;

-- The forms exist with the typed forms' result columns, in the bundles of
-- their typed forms (and operator).
SELECT p.oid::regprocedure AS form, pg_get_function_result(p.oid) = pg_get_function_result(t.oid) AS same_result,
       p.provolatile = t.provolatile AS same_volatility, p.prosecdef,
       (SELECT string_agg(b.bundle, ',' ORDER BY b.bundle) FROM idemgate.bundle_members b WHERE b.fn = p.oid::regprocedure::text) AS bundles,
       (SELECT string_agg(b.bundle, ',' ORDER BY b.bundle) FROM idemgate.bundle_members b WHERE b.fn = t.oid::regprocedure::text) AS typed_bundles
FROM pg_proc p JOIN pg_proc t ON t.proname = p.proname AND t.pronamespace = p.pronamespace AND t.oid <> p.oid
WHERE p.pronamespace = 'idemgate'::regnamespace AND p.proargtypes = '3802'::oidvector
  AND p.proname IN ('claim', 'request_approval', 'peek_approval', 'consume_approval', 'enqueue_effect',
                    'cas_transition', 'renew_lease', 'fail', 'record_validation', 'claim_effects',
                    'complete_effect', 'fail_effect')
ORDER BY 1::text;
-- Typed calls with untyped literals still resolve to the typed form.
SELECT count(*) AS typed_peek_garbage FROM idemgate.peek_approval('garbage');
SELECT count(*) AS typed_claim_effects FROM idemgate.claim_effects('request_forms_none');

-- Bad requests: the request itself, unknown fields, missing fields, types.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval(NULL::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval('["token"]'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve", "aprover": "ana"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve", "approver": null}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.consume_approval('{"token": 42, "decision": "approve", "approver": "ana"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "not-a-uuid", "version": 0, "new_state": "completed"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1.5", "new_state": "completed"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": true, "new_state": "completed"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.fail('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "error_class": "x", "retryable": "yes"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.request_approval('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "effects": [], "audience": "ana"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.request_approval('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "effects": [], "audience": ["ana", 7]}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('{"effect_type": "x", "lease": "soon"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('{"effect_type": "x", "batch": 0}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('{"batch": 5}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.peek_approval('{}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.fail_effect('{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "error_class": "oops"}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.complete_effect('{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "status": 999}'::jsonb)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.renew_lease('{"key": "", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "extend_by": "1 minute"}'::jsonb)$$);
-- A bad request changes nothing.
SELECT count(*) AS runs_k FROM idemgate.runs WHERE idempotency_key = 'k';

-- The approval path as n8n drives it: claim, record_validation,
-- request_approval, peek, consume. version travels as a string.
CREATE TEMP TABLE c AS SELECT * FROM idemgate.claim('{"key": "request-forms-1", "payload": {"ticket": 1}}'::jsonb);
SELECT outcome FROM c;
SELECT valid, errors, attempt FROM c, idemgate.record_validation(jsonb_build_object(
  'key', c.idempotency_key, 'owner', c.lease_owner, 'version', c.version::text,
  'output', '{"label": "refund"}'::jsonb, 'schema', '{"type": "object", "required": ["label", "draft"]}'::jsonb));
CREATE TEMP TABLE a AS SELECT r.* FROM c, idemgate.request_approval(jsonb_build_object(
  'key', c.idempotency_key, 'owner', c.lease_owner, 'version', c.version::text,
  'effects', '{"type": "request_forms_mail", "target": "ana@example.com", "payload": {"body": "Hola, <b>Ana</b>"}}'::jsonb,
  'expires_in', '2 hours', 'card', '{"title": "Refund <script>alert(1)</script>"}'::jsonb,
  'audience', '["maria@example.com", "joan@example.com"]'::jsonb, 'requested_by', 'n8n:refunds')) r;
SELECT length(token) AS token_length, version = (SELECT version + 1 FROM c) AS version_bumped,
       expires_at - now() BETWEEN interval '119 minutes' AND interval '2 hours' AS expires_in_2h FROM a;
SELECT audience, requested_by FROM idemgate.approvals WHERE idempotency_key = 'request-forms-1';
-- peek, jsonb form = typed form; an unknown token gives one row, status invalid.
SELECT (SELECT row(p.*)::text FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token)) p) =
       (SELECT row(p.*)::text FROM a, idemgate.peek_approval(a.token) p) AS peek_same;
SELECT status, card->>'title' AS title FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token));
SELECT * FROM idemgate.peek_approval('{"token": "no-such-token"}'::jsonb);
-- consume with a reason containing commas (what n8n's comma splitting broke),
-- a wrong approver first (invalid, one row), then the right one, then again.
SELECT outcome, idempotency_key, effect_ids FROM a, idemgate.consume_approval(jsonb_build_object(
  'token', a.token, 'decision', 'approve', 'approver', 'mallory@example.com', 'reason', 'ok, checked'));
SELECT outcome, idempotency_key, cardinality(effect_ids) AS effects FROM a, idemgate.consume_approval(jsonb_build_object(
  'token', a.token, 'decision', 'approve', 'approver', 'maria@example.com', 'reason', 'ok, checked'));
SELECT outcome FROM a, idemgate.consume_approval(jsonb_build_object(
  'token', a.token, 'decision', 'approve', 'approver', 'maria@example.com'));
SELECT decision, approver_subject FROM idemgate.approvals WHERE idempotency_key = 'request-forms-1';
SELECT details->>'reason' AS reason FROM idemgate.events
WHERE idempotency_key = 'request-forms-1' AND kind = 'approval_decided';
SELECT status FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token));

-- The effect worker: claim_effects (batch as a string, lease in seconds),
-- complete_effect; then the duplicate sees the stored result.
CREATE TEMP TABLE e AS SELECT * FROM idemgate.claim_effects('{"effect_type": "request_forms_mail", "batch": "5", "lease": 30}'::jsonb);
SELECT target, payload, attempt FROM e;
SELECT lease_expires_at - updated_at AS lease FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM e);
SELECT done AS completed FROM e, idemgate.complete_effect(jsonb_build_object('effect_id', e.effect_id, 'owner', e.lease_owner,
  'provider_id', 'msg-1', 'status', 202)) done;
SELECT done AS completed_again FROM e, idemgate.complete_effect(jsonb_build_object('effect_id', e.effect_id, 'owner', e.lease_owner)) done;
SELECT provider_id, last_status FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM e);
SELECT outcome, state, result->'effects'->0->>'provider_id' AS provider_id
FROM idemgate.claim('{"key": "request-forms-1", "payload": {"ticket": 1}}'::jsonb);

-- fail_effect: error classes as the typed form, retry_after from a
-- Retry-After header (seconds, as a string).
CREATE TEMP TABLE c2 AS SELECT * FROM idemgate.claim('{"key": "request-forms-2", "payload": {"ticket": 2}}'::jsonb);
CREATE TEMP TABLE q2 AS SELECT q.* FROM c2, idemgate.enqueue_effect(jsonb_build_object('key', c2.idempotency_key, 'owner', c2.lease_owner,
  'version', c2.version::text, 'effects', '[{"type": "request_forms_hook", "target": "a", "payload": {}},
                                            {"type": "request_forms_hook", "target": "b", "payload": {}}]'::jsonb)) q;
SELECT cardinality(effect_ids) AS effects, version = (SELECT version + 1 FROM c2) AS version_bumped FROM q2;
-- IG002 comes through unchanged: the run is approved, not processing.
SELECT pg_temp.sqlstate_of(format($$SELECT * FROM idemgate.request_approval('{"key": "request-forms-2", "owner": "%s", "version": "%s", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb)$$,
       (SELECT lease_owner FROM c2), (SELECT version FROM q2)));
CREATE TEMP TABLE e2 AS SELECT * FROM idemgate.claim_effects('{"effect_type": "request_forms_hook"}'::jsonb);
SELECT target, idemgate.fail_effect(jsonb_build_object('effect_id', effect_id, 'owner', lease_owner,
         'error_class', CASE target WHEN 'a' THEN 'rate_limited' ELSE 'rejected' END,
         'error', 'HTTP 4xx, see body', 'retry_after', '120', 'status', CASE target WHEN 'a' THEN 429 ELSE 400 END)) AS new_state
FROM e2 ORDER BY target;
SELECT target, state, last_status, last_error, next_attempt_at - updated_at >= interval '120 seconds' AS honours_retry_after
FROM idemgate.outbox WHERE idempotency_key = 'request-forms-2' ORDER BY target;
-- A lost lease: NULL, one row per call (two calls here), like the typed form.
SELECT count(*) AS rows, bool_and(f IS NULL) AS is_null FROM e2, idemgate.fail_effect(jsonb_build_object(
  'effect_id', e2.effect_id, 'owner', e2.lease_owner, 'error_class', 'transport')) f;

-- cas_transition, renew_lease, fail: results equal the typed form's; a
-- stale owner gets NULL in exactly one row.
CREATE TEMP TABLE c3 AS SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}, "lease": "1 minute"}'::jsonb);
SELECT renewed > now() + interval '4 minutes' AS renewed
FROM c3, idemgate.renew_lease(jsonb_build_object('key', c3.idempotency_key, 'owner', c3.lease_owner,
  'version', c3.version::text, 'extend_by', '5 minutes')) renewed;
SELECT pg_temp.rows_of(format($$SELECT * FROM idemgate.renew_lease('{"key": "request-forms-3", "owner": "%s", "version": "7", "extend_by": "1 minute"}'::jsonb)$$,
       (SELECT lease_owner FROM c3))) AS stale_rows,
       idemgate.renew_lease(jsonb_build_object('key', 'request-forms-3', 'owner', (SELECT lease_owner FROM c3),
                                               'version', 7, 'extend_by', '1 minute')) AS stale;
SELECT f AS failed FROM c3, idemgate.fail(jsonb_build_object('key', c3.idempotency_key, 'owner', c3.lease_owner,
  'version', c3.version, 'error_class', 'model_timeout', 'error', 'took 61 s, gave up', 'retryable', true)) f;
SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'request-forms-3';
CREATE TEMP TABLE c3b AS SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}}'::jsonb);
SELECT outcome FROM c3b;
SELECT v = c3b.version + 1 AS new_version FROM c3b, idemgate.cas_transition(jsonb_build_object('key', c3b.idempotency_key, 'owner', c3b.lease_owner,
  'version', c3b.version::text, 'new_state', 'completed', 'result', '{"answer": "done, twice checked"}'::jsonb)) v;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.cas_transition('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 9, "new_state": "bogus"}'::jsonb)$$);
SELECT count(*) AS rows, bool_and(v IS NULL) AS is_null FROM idemgate.cas_transition(
  '{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 9, "new_state": "completed"}'::jsonb) v;
SELECT outcome, result FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}}'::jsonb);
-- IG001 comes through unchanged.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 4}}'::jsonb)$$);

-- Lost ownership: request_approval, enqueue_effect and record_validation
-- answer one row of NULLs, never zero rows.
SELECT * FROM idemgate.request_approval('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb);
SELECT * FROM idemgate.enqueue_effect('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb);
SELECT * FROM idemgate.record_validation('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "output": {}, "schema": {"type": "object"}}'::jsonb);
SELECT * FROM idemgate.consume_approval('{"token": "no-such-token", "decision": "approve", "approver": "ana"}'::jsonb);

-- Privileges: the forms follow their bundles. A client may call the client
-- forms but not the approver ones; an approver the reverse.
CREATE ROLE request_forms_client;
CREATE ROLE request_forms_approver;
SELECT idemgate.grant_role('request_forms_client', 'client');
SELECT idemgate.grant_role('request_forms_approver', 'approver');
SELECT idemgate.grant_effect_type('request_forms_client', 'request_forms_none');
SET SESSION AUTHORIZATION request_forms_client;
SELECT outcome FROM idemgate.claim('{"key": "request-forms-4", "payload": {}}'::jsonb);
SELECT count(*) AS pulled FROM idemgate.claim_effects('{"effect_type": "request_forms_none"}'::jsonb);
SELECT pg_temp.code_of($$SELECT * FROM idemgate.peek_approval('{"token": "x"}'::jsonb)$$) AS client_peek,
       pg_temp.code_of($$SELECT * FROM idemgate.consume_approval('{"token": "x", "decision": "approve", "approver": "me"}'::jsonb)$$) AS client_consume;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION request_forms_approver;
SELECT status FROM idemgate.peek_approval('{"token": "x"}'::jsonb);
SELECT outcome FROM idemgate.consume_approval('{"token": "x", "decision": "approve", "approver": "me"}'::jsonb);
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim_effects('{"effect_type": "x"}'::jsonb)$$) AS approver_claim_effects,
       pg_temp.code_of($$SELECT * FROM idemgate.fail('{"key": "x", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "error_class": "x", "retryable": true}'::jsonb)$$) AS approver_fail;
RESET SESSION AUTHORIZATION;
SELECT idemgate.revoke_effect_type('request_forms_client', 'request_forms_none');
SELECT idemgate.revoke_role('request_forms_client', 'client');
SELECT idemgate.revoke_role('request_forms_approver', 'approver');
DROP ROLE request_forms_client;
DROP ROLE request_forms_approver;

-- An update from 1.0 gives roles that already hold a bundle its new forms.
CREATE DATABASE request_forms_update;
\c request_forms_update
SET client_min_messages = warning;
CREATE EXTENSION idemgate VERSION '1.0';
CREATE ROLE request_forms_old_client;
SELECT idemgate.grant_role('request_forms_old_client', 'client');
ALTER EXTENSION idemgate UPDATE;
SELECT has_function_privilege('request_forms_old_client', 'idemgate.fail_effect(jsonb)', 'EXECUTE') AS fail_effect_form,
       has_function_privilege('request_forms_old_client', 'idemgate.enqueue_effect(jsonb)', 'EXECUTE') AS enqueue_form,
       has_function_privilege('request_forms_old_client', 'idemgate.consume_approval(jsonb)', 'EXECUTE') AS consume_form;
SELECT idemgate.revoke_role('request_forms_old_client', 'client');
DROP EXTENSION idemgate;
DROP ROLE request_forms_old_client;
\c contrib_regression
DROP DATABASE request_forms_update;
