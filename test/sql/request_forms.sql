-- request_forms (docs/n8n.md): the one-jsonb-argument form of every function a
-- workflow calls. Each is driven the way n8n's Postgres node calls it (one
-- parameter, JSON.stringify of the arguments, bigint values as strings)
-- and compared with the typed form: same results, same errors, same
-- bundles; unknown field → 22023, missing required field → 22004, wrong
-- type → 22023, each naming the field; single-row forms give one row.
-- pgTAP: each query's rows are compared as text (record output).
\i test/sql/include/quiet.psql

-- An update from 1.0 gives roles that already hold a bundle its new forms.
-- (Done first, in a database of its own; the answers are kept in psql
-- variables and asserted below.)
CREATE DATABASE request_forms_update;
\c request_forms_update
SET client_min_messages = warning;
CREATE EXTENSION idemgate VERSION '1.0';
CREATE ROLE request_forms_old_client;
SELECT idemgate.grant_role('request_forms_old_client', 'client') \g /dev/null
ALTER EXTENSION idemgate UPDATE;
SELECT has_function_privilege('request_forms_old_client', 'idemgate.fail_effect(jsonb)', 'EXECUTE') AS old_fail_effect_form,
       has_function_privilege('request_forms_old_client', 'idemgate.enqueue_effect(jsonb)', 'EXECUTE') AS old_enqueue_form,
       has_function_privilege('request_forms_old_client', 'idemgate.consume_approval(jsonb)', 'EXECUTE') AS old_consume_form \gset
SELECT idemgate.revoke_role('request_forms_old_client', 'client') \g /dev/null
DROP EXTENSION idemgate;
DROP ROLE request_forms_old_client;
\c contrib_regression
SET client_min_messages = warning;
DROP DATABASE request_forms_update;

CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET search_path = tap, public;
-- rows_of(q) counts the rows q returns.
CREATE FUNCTION pg_temp.rows_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN EXECUTE 'SELECT count(*) FROM (' || q || ') x' INTO n; RETURN n; END $$;
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The forms exist with the typed forms' result columns, in the bundles of
-- their typed forms (and operator).
SELECT results_eq($$SELECT x::text FROM (SELECT p.oid::regprocedure AS form, pg_get_function_result(p.oid) = pg_get_function_result(t.oid) AS same_result,
                             p.provolatile = t.provolatile AS same_volatility, p.prosecdef,
                             (SELECT string_agg(b.bundle, ',' ORDER BY b.bundle) FROM idemgate.bundle_members b WHERE b.fn = p.oid::regprocedure::text) AS bundles,
                             (SELECT string_agg(b.bundle, ',' ORDER BY b.bundle) FROM idemgate.bundle_members b WHERE b.fn = t.oid::regprocedure::text) AS typed_bundles
                      FROM pg_proc p JOIN pg_proc t ON t.proname = p.proname AND t.pronamespace = p.pronamespace AND t.oid <> p.oid
                      WHERE p.pronamespace = 'idemgate'::regnamespace AND p.proargtypes = '3802'::oidvector
                        AND p.proname IN ('claim', 'request_approval', 'peek_approval', 'consume_approval', 'enqueue_effect',
                                          'cas_transition', 'renew_lease', 'fail', 'record_validation', 'claim_effects',
                                          'complete_effect', 'fail_effect')
                      ORDER BY 1::text) x$$,
                  $$VALUES ('("idemgate.cas_transition(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.claim(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.claim_effects(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.complete_effect(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.consume_approval(jsonb)",t,t,t,"approver,operator","approver,operator")'),
                           ('("idemgate.enqueue_effect(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.fail(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.fail_effect(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.peek_approval(jsonb)",t,t,t,"approver,operator","approver,operator")'),
                           ('("idemgate.record_validation(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.renew_lease(jsonb)",t,t,t,"client,operator","client,operator")'),
                           ('("idemgate.request_approval(jsonb)",t,t,t,"client,operator","client,operator")')$$,
                  'p.oid::regprocedure AS form, pg_get_function_result(p.oid) = pg_get_function_result(t.oid) AS sam...');

-- Typed calls with untyped literals still resolve to the typed form.
SELECT results_eq($$SELECT x::text FROM (SELECT count(*) AS typed_peek_garbage FROM idemgate.peek_approval('garbage')) x$$,
                  $$VALUES ('(0)')$$,
                  'count(*) AS typed_peek_garbage FROM idemgate.peek_approval(''garbage'')');

SELECT results_eq($$SELECT x::text FROM (SELECT count(*) AS typed_claim_effects FROM idemgate.claim_effects('request_forms_none')) x$$,
                  $$VALUES ('(0)')$$,
                  'count(*) AS typed_claim_effects FROM idemgate.claim_effects(''request_forms_none'')');

-- Bad requests: the request itself, unknown fields, missing fields, types.
SELECT throws_ok($$SELECT * FROM idemgate.consume_approval(NULL::jsonb)$$, '22004', 'argument "request" must not be NULL', '$$SELECT * FROM idemgate.consume_approval(NULL::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.consume_approval('["token"]'::jsonb)$$, '22023', 'argument "request" must be a JSON object with fields token, decision, approver and reason', '$$SELECT * FROM idemgate.consume_approval(''["token"]''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve", "aprover": "ana"}'::jsonb)$$, '22023', 'unknown field "aprover" in argument "request" of consume_approval', '$$SELECT * FROM idemgate.consume_approval(''{"token": "t", "decision": "approve", "aprover": "ana"}'':');

SELECT throws_ok($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve"}'::jsonb)$$, '22004', 'field "approver" of argument "request" must not be missing or null', '$$SELECT * FROM idemgate.consume_approval(''{"token": "t", "decision": "approve"}''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.consume_approval('{"token": "t", "decision": "approve", "approver": null}'::jsonb)$$, '22004', 'field "approver" of argument "request" must not be missing or null', '$$SELECT * FROM idemgate.consume_approval(''{"token": "t", "decision": "approve", "approver": null}'':');

SELECT throws_ok($$SELECT * FROM idemgate.consume_approval('{"token": 42, "decision": "approve", "approver": "ana"}'::jsonb)$$, '22023', 'field "token" of argument "request" must be a JSON string', '$$SELECT * FROM idemgate.consume_approval(''{"token": 42, "decision": "approve", "approver": "ana"}'':');

SELECT throws_ok($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "not-a-uuid", "version": 0, "new_state": "completed"}'::jsonb)$$, '22023', 'field "owner" of argument "request" must be a UUID string, not "not-a-uuid"', '$$SELECT * FROM idemgate.cas_transition(''{"key": "k", "owner": "not-a-uuid", "version": 0, "new_stat');

SELECT throws_ok($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1.5", "new_state": "completed"}'::jsonb)$$, '22023', 'field "version" of argument "request" must be an integer (a JSON number or a string of digits), not "1.5"', '$$SELECT * FROM idemgate.cas_transition(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11');

SELECT throws_ok($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": true, "new_state": "completed"}'::jsonb)$$, '22023', 'field "version" of argument "request" must be an integer (a JSON number or a string of digits)', '$$SELECT * FROM idemgate.cas_transition(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11');

SELECT throws_ok($$SELECT * FROM idemgate.cas_transition('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0}'::jsonb)$$, '22004', 'field "new_state" of argument "request" must not be missing or null', '$$SELECT * FROM idemgate.cas_transition(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11');

SELECT throws_ok($$SELECT * FROM idemgate.fail('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "error_class": "x", "retryable": "yes"}'::jsonb)$$, '22023', 'field "retryable" of argument "request" must be a JSON boolean', '$$SELECT * FROM idemgate.fail(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "versio');

SELECT throws_ok($$SELECT * FROM idemgate.request_approval('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "effects": [], "audience": "ana"}'::jsonb)$$, '22023', 'field "audience" of argument "request" must be a JSON array of strings', '$$SELECT * FROM idemgate.request_approval(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a');

SELECT throws_ok($$SELECT * FROM idemgate.request_approval('{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "effects": [], "audience": ["ana", 7]}'::jsonb)$$, '22023', 'field "audience" of argument "request" must be a JSON array of strings', '$$SELECT * FROM idemgate.request_approval(''{"key": "k", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a');

SELECT throws_ok($$SELECT * FROM idemgate.claim_effects('{"effect_type": "x", "lease": "soon"}'::jsonb)$$, '22023', 'field "lease" of argument "request" must be an interval (a string such as "5 minutes", or a number of seconds), not "soon"', '$$SELECT * FROM idemgate.claim_effects(''{"effect_type": "x", "lease": "soon"}''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.claim_effects('{"effect_type": "x", "batch": 0}'::jsonb)$$, '22023', 'argument "batch" must be between 1 and 1000, not 0', '$$SELECT * FROM idemgate.claim_effects(''{"effect_type": "x", "batch": 0}''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.claim_effects('{"batch": 5}'::jsonb)$$, '22004', 'field "effect_type" of argument "request" must not be missing or null', '$$SELECT * FROM idemgate.claim_effects(''{"batch": 5}''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.peek_approval('{}'::jsonb)$$, '22004', 'field "token" of argument "request" must not be missing or null', '$$SELECT * FROM idemgate.peek_approval(''{}''::jsonb)$$');

SELECT throws_ok($$SELECT * FROM idemgate.fail_effect('{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "error_class": "oops"}'::jsonb)$$, '22023', 'argument "error_class" must be a known error class, not "oops"', '$$SELECT * FROM idemgate.fail_effect(''{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "owner":');

SELECT throws_ok($$SELECT * FROM idemgate.complete_effect('{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "status": 999}'::jsonb)$$, '22023', 'argument "status" must be an HTTP status between 100 and 599, not 999', '$$SELECT * FROM idemgate.complete_effect(''{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "own');

SELECT throws_ok($$SELECT * FROM idemgate.renew_lease('{"key": "", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "extend_by": "1 minute"}'::jsonb)$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0', '$$SELECT * FROM idemgate.renew_lease(''{"key": "", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "');

-- A bad request changes nothing.
SELECT results_eq($$SELECT x::text FROM (SELECT count(*) AS runs_k FROM idemgate.runs WHERE idempotency_key = 'k') x$$,
                  $$VALUES ('(0)')$$,
                  'count(*) AS runs_k FROM idemgate.runs WHERE idempotency_key = ''k''');

-- claim's lease takes a number of seconds like every interval field (only
-- a string before claim(jsonb) shared this reader); left out, it is the
-- typed default, 5 minutes.
SELECT count(*) FROM (VALUES ('{"key": "request-forms-lease-300", "payload": {}, "lease": 300}'),
                             ('{"key": "request-forms-lease-90", "payload": {}, "lease": 90.5}'),
                             ('{"key": "request-forms-lease-default", "payload": {}}')) v(k),
                     LATERAL idemgate.claim(k::jsonb) c \g /dev/null
SELECT results_eq($$SELECT x::text FROM (SELECT idempotency_key,
                             extract(epoch FROM lease_expires_at - lease_started_at)::float8 AS lease_seconds
                      FROM idemgate.runs WHERE idempotency_key LIKE 'request-forms-lease-%' ORDER BY 1) x$$,
                  $$VALUES ('(request-forms-lease-300,300)'), ('(request-forms-lease-90,90.5)'),
                           ('(request-forms-lease-default,300)')$$,
                  'claim(jsonb): lease 300 is 5 minutes, 90.5 is 90.5 s, none is 5 minutes');

-- The approval path as n8n drives it: claim, record_validation,
-- request_approval, peek, consume. version travels as a string.
CREATE TEMP TABLE c AS SELECT * FROM idemgate.claim('{"key": "request-forms-1", "payload": {"ticket": 1}}'::jsonb);
SELECT results_eq($$SELECT x::text FROM (SELECT outcome FROM c) x$$,
                  $$VALUES ('(claimed)')$$,
                  'outcome FROM c');

SELECT results_eq($$SELECT x::text FROM (SELECT valid, errors, attempt FROM c, idemgate.record_validation(jsonb_build_object(
                        'key', c.idempotency_key, 'owner', c.lease_owner, 'version', c.version::text,
                        'output', '{"label": "refund"}'::jsonb, 'schema', '{"type": "object", "required": ["label", "draft"]}'::jsonb))) x$$,
                  $$VALUES ('(f,"[{""path"": ""$"", ""error"": ""missing required property \\""draft\\""""}]",1)')$$,
                  'valid, errors, attempt FROM c, idemgate.record_validation(jsonb_build_object( ''key'', c.idempotenc...');
-- 1.3: while the latest output is invalid nothing goes on (IG004): repaired.
SELECT results_eq($$SELECT x::text FROM (SELECT valid, attempt FROM c, idemgate.record_validation(jsonb_build_object(
                        'key', c.idempotency_key, 'owner', c.lease_owner, 'version', c.version::text,
                        'output', '{"label": "refund", "draft": "ok"}'::jsonb,
                        'schema', '{"type": "object", "required": ["label", "draft"]}'::jsonb))) x$$,
                  $$VALUES ('(t,2)')$$,
                  'the repaired output is valid (attempt 2)');

CREATE TEMP TABLE a AS SELECT r.* FROM c, idemgate.request_approval(jsonb_build_object(
  'key', c.idempotency_key, 'owner', c.lease_owner, 'version', c.version::text,
  'effects', '{"type": "request_forms_mail", "target": "ana@example.com", "payload": {"body": "Hola, <b>Ana</b>"}}'::jsonb,
  'expires_in', '2 hours', 'card', '{"title": "Refund <script>alert(1)</script>"}'::jsonb,
  'audience', '["maria@example.com", "joan@example.com"]'::jsonb, 'requested_by', 'n8n:refunds')) r;
SELECT results_eq($$SELECT x::text FROM (SELECT length(token) AS token_length, version = (SELECT version + 1 FROM c) AS version_bumped,
                             expires_at - now() BETWEEN interval '119 minutes' AND interval '2 hours' AS expires_in_2h FROM a) x$$,
                  $$VALUES ('(43,t,t)')$$,
                  'length(token) AS token_length, version = (SELECT version + 1 FROM c) AS version_bumped, expires_a...');

SELECT results_eq($$SELECT x::text FROM (SELECT audience, requested_by FROM idemgate.approvals WHERE idempotency_key = 'request-forms-1') x$$,
                  $$VALUES ('("{maria@example.com,joan@example.com}",n8n:refunds)')$$,
                  'audience, requested_by FROM idemgate.approvals WHERE idempotency_key = ''request-forms-1''');

-- peek, jsonb form = typed form; an unknown token gives one row, status invalid.
SELECT results_eq($$SELECT x::text FROM (SELECT (SELECT row(p.*)::text FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token)) p) =
                             (SELECT row(p.*)::text FROM a, idemgate.peek_approval(a.token) p) AS peek_same) x$$,
                  $$VALUES ('(t)')$$,
                  '(SELECT row(p.*)::text FROM a, idemgate.peek_approval(jsonb_build_object(''token'', a.token)) p) = ...');

SELECT results_eq($$SELECT x::text FROM (SELECT status, card->>'title' AS title FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token))) x$$,
                  $$VALUES ('(pending,"Refund <script>alert(1)</script>")')$$,
                  'status, card->>''title'' AS title FROM a, idemgate.peek_approval(jsonb_build_object(''token'', a.token))');

SELECT results_eq($$SELECT x::text FROM (SELECT * FROM idemgate.peek_approval('{"token": "no-such-token"}'::jsonb)) x$$,
                  $$VALUES ('(,,invalid,,,,)')$$,
                  '* FROM idemgate.peek_approval(''{"token": "no-such-token"}''::jsonb)');

-- consume with a reason containing commas (what n8n's comma splitting broke),
-- a wrong approver first (invalid, one row), then the right one, then again.
SELECT results_eq($$SELECT x::text FROM (SELECT outcome, idempotency_key, effect_ids FROM a, idemgate.consume_approval(jsonb_build_object(
                        'token', a.token, 'decision', 'approve', 'approver', 'mallory@example.com', 'reason', 'ok, checked'))) x$$,
                  $$VALUES ('(invalid,,)')$$,
                  'outcome, idempotency_key, effect_ids FROM a, idemgate.consume_approval(jsonb_build_object( ''token...');

SELECT results_eq($$SELECT x::text FROM (SELECT outcome, idempotency_key, cardinality(effect_ids) AS effects FROM a, idemgate.consume_approval(jsonb_build_object(
                        'token', a.token, 'decision', 'approve', 'approver', 'maria@example.com', 'reason', 'ok, checked'))) x$$,
                  $$VALUES ('(approved,request-forms-1,1)')$$,
                  'outcome, idempotency_key, cardinality(effect_ids) AS effects FROM a, idemgate.consume_approval(js...');

SELECT results_eq($$SELECT x::text FROM (SELECT outcome FROM a, idemgate.consume_approval(jsonb_build_object(
                        'token', a.token, 'decision', 'approve', 'approver', 'maria@example.com'))) x$$,
                  $$VALUES ('(invalid)')$$,
                  'outcome FROM a, idemgate.consume_approval(jsonb_build_object( ''token'', a.token, ''decision'', ''appr...');

SELECT results_eq($$SELECT x::text FROM (SELECT decision, approver_subject FROM idemgate.approvals WHERE idempotency_key = 'request-forms-1') x$$,
                  $$VALUES ('(approve,maria@example.com)')$$,
                  'decision, approver_subject FROM idemgate.approvals WHERE idempotency_key = ''request-forms-1''');

SELECT results_eq($$SELECT x::text FROM (SELECT details->>'reason' AS reason FROM idemgate.events
                      WHERE idempotency_key = 'request-forms-1' AND kind = 'approval_decided') x$$,
                  $$VALUES ('("ok, checked")')$$,
                  'details->>''reason'' AS reason FROM idemgate.events WHERE idempotency_key = ''request-forms-1'' AND k...');

SELECT results_eq($$SELECT x::text FROM (SELECT status FROM a, idemgate.peek_approval(jsonb_build_object('token', a.token))) x$$,
                  $$VALUES ('(consumed)')$$,
                  'status FROM a, idemgate.peek_approval(jsonb_build_object(''token'', a.token))');

-- The effect worker: claim_effects (batch as a string, lease in seconds),
-- complete_effect; then the duplicate sees the stored result.
CREATE TEMP TABLE e AS SELECT * FROM idemgate.claim_effects('{"effect_type": "request_forms_mail", "batch": "5", "lease": 30}'::jsonb);
SELECT results_eq($$SELECT x::text FROM (SELECT target, payload, attempt FROM e) x$$,
                  $$VALUES ('(ana@example.com,"{""body"": ""Hola, <b>Ana</b>""}",1)')$$,
                  'target, payload, attempt FROM e');

SELECT results_eq($$SELECT x::text FROM (SELECT lease_expires_at - updated_at AS lease FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM e)) x$$,
                  $$VALUES ('("@ 30 secs")')$$,
                  'lease_expires_at - updated_at AS lease FROM idemgate.outbox WHERE effect_id = (SELECT effect_id F...');

SELECT results_eq($$SELECT x::text FROM (SELECT done AS completed FROM e, idemgate.complete_effect(jsonb_build_object('effect_id', e.effect_id, 'owner', e.lease_owner,
                        'provider_id', 'msg-1', 'status', 202)) done) x$$,
                  $$VALUES ('(t)')$$,
                  'done AS completed FROM e, idemgate.complete_effect(jsonb_build_object(''effect_id'', e.effect_id, ''...');

SELECT results_eq($$SELECT x::text FROM (SELECT done AS completed_again FROM e, idemgate.complete_effect(jsonb_build_object('effect_id', e.effect_id, 'owner', e.lease_owner)) done) x$$,
                  $$VALUES ('(f)')$$,
                  'done AS completed_again FROM e, idemgate.complete_effect(jsonb_build_object(''effect_id'', e.effect...');

SELECT results_eq($$SELECT x::text FROM (SELECT provider_id, last_status FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM e)) x$$,
                  $$VALUES ('(msg-1,202)')$$,
                  'provider_id, last_status FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM e)');

SELECT results_eq($$SELECT x::text FROM (SELECT outcome, state, result->'effects'->0->>'provider_id' AS provider_id
                      FROM idemgate.claim('{"key": "request-forms-1", "payload": {"ticket": 1}}'::jsonb)) x$$,
                  $$VALUES ('(duplicate,completed,msg-1)')$$,
                  'outcome, state, result->''effects''->0->>''provider_id'' AS provider_id FROM idemgate.claim(''{"key": ...');

-- fail_effect: error classes as the typed form, retry_after from a
-- Retry-After header (seconds, as a string).
CREATE TEMP TABLE c2 AS SELECT * FROM idemgate.claim('{"key": "request-forms-2", "payload": {"ticket": 2}}'::jsonb);
CREATE TEMP TABLE q2 AS SELECT q.* FROM c2, idemgate.enqueue_effect(jsonb_build_object('key', c2.idempotency_key, 'owner', c2.lease_owner,
  'version', c2.version::text, 'effects', '[{"type": "request_forms_hook", "target": "a", "payload": {}},
                                            {"type": "request_forms_hook", "target": "b", "payload": {}}]'::jsonb)) q;
SELECT results_eq($$SELECT x::text FROM (SELECT cardinality(effect_ids) AS effects, version = (SELECT version + 1 FROM c2) AS version_bumped FROM q2) x$$,
                  $$VALUES ('(2,t)')$$,
                  'cardinality(effect_ids) AS effects, version = (SELECT version + 1 FROM c2) AS version_bumped FROM q2');

-- IG002 comes through unchanged: the run is approved, not processing.
SELECT throws_ok(format($$SELECT * FROM idemgate.request_approval('{"key": "request-forms-2", "owner": "%s", "version": "%s", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb)$$,
       (SELECT lease_owner FROM c2), (SELECT version FROM q2)), 'IG002', 'illegal transition of run "request-forms-2" from approved to awaiting_human', 'format($$SELECT * FROM idemgate.request_approval(''{"key": "request-forms-2", "owner": "%s", "version');

CREATE TEMP TABLE e2 AS SELECT * FROM idemgate.claim_effects('{"effect_type": "request_forms_hook"}'::jsonb);
SELECT results_eq($$SELECT x::text FROM (SELECT target, idemgate.fail_effect(jsonb_build_object('effect_id', effect_id, 'owner', lease_owner,
                               'error_class', CASE target WHEN 'a' THEN 'rate_limited' ELSE 'rejected' END,
                               'error', 'HTTP 4xx, see body', 'retry_after', '120', 'status', CASE target WHEN 'a' THEN 429 ELSE 400 END)) AS new_state
                      FROM e2 ORDER BY target) x$$,
                  $$VALUES ('(a,pending)'),
                           ('(b,failed)')$$,
                  'target, idemgate.fail_effect(jsonb_build_object(''effect_id'', effect_id, ''owner'', lease_owner, ''er...');

SELECT results_eq($$SELECT x::text FROM (SELECT target, state, last_status, last_error, next_attempt_at - updated_at >= interval '120 seconds' AS honours_retry_after
                      FROM idemgate.outbox WHERE idempotency_key = 'request-forms-2' ORDER BY target) x$$,
                  $$VALUES ('(a,pending,429,"HTTP 4xx, see body",t)'),
                           ('(b,failed,400,"HTTP 4xx, see body",f)')$$,
                  'target, state, last_status, last_error, next_attempt_at - updated_at >= interval ''120 seconds'' AS...');

-- A lost lease: NULL, one row per call (two calls here), like the typed form.
SELECT results_eq($$SELECT x::text FROM (SELECT count(*) AS rows, bool_and(f IS NULL) AS is_null FROM e2, idemgate.fail_effect(jsonb_build_object(
                        'effect_id', e2.effect_id, 'owner', e2.lease_owner, 'error_class', 'transport')) f) x$$,
                  $$VALUES ('(2,t)')$$,
                  'count(*) AS rows, bool_and(f IS NULL) AS is_null FROM e2, idemgate.fail_effect(jsonb_build_object...');

-- cas_transition, renew_lease, fail: results equal the typed form's; a
-- stale owner gets NULL in exactly one row.
CREATE TEMP TABLE c3 AS SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}, "lease": "1 minute"}'::jsonb);
SELECT results_eq($$SELECT x::text FROM (SELECT renewed > now() + interval '4 minutes' AS renewed
                      FROM c3, idemgate.renew_lease(jsonb_build_object('key', c3.idempotency_key, 'owner', c3.lease_owner,
                        'version', c3.version::text, 'extend_by', '5 minutes')) renewed) x$$,
                  $$VALUES ('(t)')$$,
                  'renewed > now() + interval ''4 minutes'' AS renewed FROM c3, idemgate.renew_lease(jsonb_build_objec...');

SELECT results_eq($r$SELECT x::text FROM (SELECT pg_temp.rows_of(format($$SELECT * FROM idemgate.renew_lease('{"key": "request-forms-3", "owner": "%s", "version": "7", "extend_by": "1 minute"}'::jsonb)$$,
                             (SELECT lease_owner FROM c3))) AS stale_rows,
                             idemgate.renew_lease(jsonb_build_object('key', 'request-forms-3', 'owner', (SELECT lease_owner FROM c3),
                                                                     'version', 7, 'extend_by', '1 minute')) AS stale) x$r$,
                  $$VALUES ('(1,)')$$,
                  'pg_temp.rows_of(format($$SELECT * FROM idemgate.renew_lease(''{"key": "request-forms-3", "owner": ...');

SELECT results_eq($$SELECT x::text FROM (SELECT f AS failed FROM c3, idemgate.fail(jsonb_build_object('key', c3.idempotency_key, 'owner', c3.lease_owner,
                        'version', c3.version, 'error_class', 'model_timeout', 'error', 'took 61 s, gave up', 'retryable', true)) f) x$$,
                  $$VALUES ('(failed_retryable)')$$,
                  'f AS failed FROM c3, idemgate.fail(jsonb_build_object(''key'', c3.idempotency_key, ''owner'', c3.leas...');

SELECT results_eq($$SELECT x::text FROM (SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'request-forms-3') x$$,
                  $$VALUES ('(failed_retryable,"{""error"": ""took 61 s, gave up"", ""failures"": 1, ""error_class"": ""model_timeout""}")')$$,
                  'state, result FROM idemgate.runs WHERE idempotency_key = ''request-forms-3''');

CREATE TEMP TABLE c3b AS SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}}'::jsonb);
SELECT results_eq($$SELECT x::text FROM (SELECT outcome FROM c3b) x$$,
                  $$VALUES ('(recovered)')$$,
                  'outcome FROM c3b');

SELECT results_eq($$SELECT x::text FROM (SELECT v = c3b.version + 1 AS new_version FROM c3b, idemgate.cas_transition(jsonb_build_object('key', c3b.idempotency_key, 'owner', c3b.lease_owner,
                        'version', c3b.version::text, 'new_state', 'completed', 'result', '{"answer": "done, twice checked"}'::jsonb)) v) x$$,
                  $$VALUES ('(t)')$$,
                  'v = c3b.version + 1 AS new_version FROM c3b, idemgate.cas_transition(jsonb_build_object(''key'', c3...');

SELECT throws_ok($$SELECT * FROM idemgate.cas_transition('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 9, "new_state": "bogus"}'::jsonb)$$, '22023', 'argument "new_state" must be a run state, not "bogus"', '$$SELECT * FROM idemgate.cas_transition(''{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d5');

SELECT results_eq($$SELECT x::text FROM (SELECT count(*) AS rows, bool_and(v IS NULL) AS is_null FROM idemgate.cas_transition(
                        '{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 9, "new_state": "completed"}'::jsonb) v) x$$,
                  $$VALUES ('(1,t)')$$,
                  'count(*) AS rows, bool_and(v IS NULL) AS is_null FROM idemgate.cas_transition( ''{"key": "request-...');

SELECT results_eq($$SELECT x::text FROM (SELECT outcome, result FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 3}}'::jsonb)) x$$,
                  $$VALUES ('(duplicate,"{""answer"": ""done, twice checked""}")')$$,
                  'outcome, result FROM idemgate.claim(''{"key": "request-forms-3", "payload": {"ticket": 3}}''::jsonb)');

-- IG001 comes through unchanged.
SELECT throws_ok($$SELECT * FROM idemgate.claim('{"key": "request-forms-3", "payload": {"ticket": 4}}'::jsonb)$$, 'IG001', 'idempotency key "request-forms-3" was already used with a different payload', '$$SELECT * FROM idemgate.claim(''{"key": "request-forms-3", "payload": {"ticket": 4}}''::jsonb)$$');

-- Lost ownership: request_approval, enqueue_effect and record_validation
-- answer one row of NULLs, never zero rows.
SELECT results_eq($$SELECT x::text FROM (SELECT * FROM idemgate.request_approval('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb)) x$$,
                  $$VALUES ('(,,,)')$$,
                  '* FROM idemgate.request_approval(''{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b...');

SELECT results_eq($$SELECT x::text FROM (SELECT * FROM idemgate.enqueue_effect('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "effects": {"type": "t", "target": "x", "payload": {}}}'::jsonb)) x$$,
                  $$VALUES ('(,,)')$$,
                  '* FROM idemgate.enqueue_effect(''{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f...');

SELECT results_eq($$SELECT x::text FROM (SELECT * FROM idemgate.record_validation('{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": "1", "output": {}, "schema": {"type": "object"}}'::jsonb)) x$$,
                  $$VALUES ('(,,)')$$,
                  '* FROM idemgate.record_validation(''{"key": "request-forms-3", "owner": "6c1f3a52-3c5e-4d1f-9d59-2...');

SELECT results_eq($$SELECT x::text FROM (SELECT * FROM idemgate.consume_approval('{"token": "no-such-token", "decision": "approve", "approver": "ana"}'::jsonb)) x$$,
                  $$VALUES ('(invalid,,)')$$,
                  '* FROM idemgate.consume_approval(''{"token": "no-such-token", "decision": "approve", "approver": "...');

-- Privileges: the forms follow their bundles. A client may call the client
-- forms but not the approver ones; an approver the reverse.
CREATE ROLE request_forms_client;
CREATE ROLE request_forms_approver;
SELECT idemgate.grant_role('request_forms_client', 'client') \g /dev/null
SELECT idemgate.grant_role('request_forms_approver', 'approver') \g /dev/null
SELECT idemgate.grant_effect_type('request_forms_client', 'request_forms_none') \g /dev/null
SELECT is(pg_temp.as_role('request_forms_client', $q$SELECT outcome FROM idemgate.claim('{"key": "request-forms-4", "payload": {}}'::jsonb)$q$),
          'claimed', 'a client claims with the form');
SELECT is(pg_temp.as_role('request_forms_client', $q$SELECT count(*) FROM idemgate.claim_effects('{"effect_type": "request_forms_none"}'::jsonb)$q$),
          '0', 'a client pulls a granted type with the form');
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', r, q), '42501', m, r || ': ' || q) FROM (VALUES
  ('request_forms_client', $q$SELECT * FROM idemgate.peek_approval('{"token": "x"}'::jsonb)$q$, 'permission denied for function peek_approval'),
  ('request_forms_client', $q$SELECT * FROM idemgate.consume_approval('{"token": "x", "decision": "approve", "approver": "me"}'::jsonb)$q$,
   'permission denied for function consume_approval'),
  ('request_forms_approver', $q$SELECT * FROM idemgate.claim_effects('{"effect_type": "x"}'::jsonb)$q$, 'permission denied for function claim_effects'),
  ('request_forms_approver', $q$SELECT * FROM idemgate.fail('{"key": "x", "owner": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "version": 0, "error_class": "x", "retryable": true}'::jsonb)$q$,
   'permission denied for function fail')
) AS t(r, q, m);
SELECT is(pg_temp.as_role('request_forms_approver', $q$SELECT status FROM idemgate.peek_approval('{"token": "x"}'::jsonb)$q$),
          'invalid', 'an approver peeks with the form');
SELECT is(pg_temp.as_role('request_forms_approver', $q$SELECT outcome FROM idemgate.consume_approval('{"token": "x", "decision": "approve", "approver": "me"}'::jsonb)$q$),
          'invalid', 'an approver consumes with the form');
SELECT results_eq($$SELECT x::text FROM (SELECT idemgate.revoke_effect_type('request_forms_client', 'request_forms_none')) x$$,
                  $$VALUES ('(t)')$$,
                  'idemgate.revoke_effect_type(''request_forms_client'', ''request_forms_none'')');

SELECT idemgate.revoke_role('request_forms_client', 'client') \g /dev/null
SELECT idemgate.revoke_role('request_forms_approver', 'approver') \g /dev/null
DROP ROLE request_forms_client;
DROP ROLE request_forms_approver;
-- The update from 1.0 (done at the top): the client's grant covers the
-- client forms, not the approver ones.
SELECT results_eq(format('SELECT %L::boolean, %L::boolean, %L::boolean', :'old_fail_effect_form', :'old_enqueue_form', :'old_consume_form'),
                  $$VALUES (true, true, false)$$, 'after ALTER EXTENSION UPDATE a client holds fail_effect(jsonb) and enqueue_effect(jsonb), not consume_approval(jsonb)');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
