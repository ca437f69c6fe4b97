-- Bad input to the run ledger: every argument checked, the right SQLSTATE,
-- a message naming the argument, and nothing half-written. pgTAP: each
-- call must raise exactly this SQLSTATE and message (throws_ok).
\i test/sql/include/pgtap.psql
SELECT count(*) AS runs_before FROM idemgate.runs \gset
SELECT count(*) AS events_before FROM idemgate.events \gset
SELECT * FROM no_plan();

SELECT throws_ok(q, code, msg, q) FROM (VALUES
  -- claim: NULLs
  ($$SELECT * FROM idemgate.claim(NULL, '{}')$$, '22004', 'argument "key" must not be NULL'),
  ($$SELECT * FROM idemgate.claim('bad-1', NULL)$$, '22004', 'argument "payload" must not be NULL'),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', NULL)$$, '22004', 'argument "lease" must not be NULL'),
  -- claim: key length, lease range
  ($$SELECT * FROM idemgate.claim('', '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.claim(repeat('é', 257), '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 514'),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '0 seconds')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '-5 minutes')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '2 hours')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '1 month')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  -- claim(jsonb): missing and mistyped fields
  ($$SELECT * FROM idemgate.claim(NULL::jsonb)$$, '22004', 'argument "request" must not be NULL'),
  ($$SELECT * FROM idemgate.claim('[1, 2]'::jsonb)$$, '22023', 'argument "request" must be a JSON object with fields key, payload, lease, workflow, owner and origin'),
  ($$SELECT * FROM idemgate.claim('{"payload": {}}'::jsonb)$$, '22004', 'field "key" of argument "request" must not be missing or null'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1"}'::jsonb)$$, '22004', 'field "payload" of argument "request" must not be missing or null'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": null}'::jsonb)$$, '22004', 'field "payload" of argument "request" must not be missing or null'),
  ($$SELECT * FROM idemgate.claim('{"key": 42, "payload": {}}'::jsonb)$$, '22023', 'field "key" of argument "request" must be a JSON string'),
  ($$SELECT * FROM idemgate.claim('{"key": "", "payload": {}}'::jsonb)$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": "soon"}'::jsonb)$$, '22023', 'field "lease" of argument "request" must be an interval (a string such as "5 minutes", or a number of seconds), not "soon"'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": true}'::jsonb)$$, '22023', 'field "lease" of argument "request" must be an interval (a string such as "5 minutes", or a number of seconds)'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": "-1 minute"}'::jsonb)$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "owner": "not-a-uuid"}'::jsonb)$$, '22023', 'field "owner" of argument "request" must be a UUID string, not "not-a-uuid"'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "workflow": ["x"]}'::jsonb)$$, '22023', 'field "workflow" of argument "request" must be a JSON string'),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "paylaod": {}}'::jsonb)$$, '22023', 'unknown field "paylaod" in argument "request" of claim'),
  -- claim_lease
  ($$SELECT * FROM idemgate.claim_lease(NULL, '\x00', gen_random_uuid(), '1 minute')$$, '22004', 'argument "key" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', NULL, gen_random_uuid(), '1 minute')$$, '22004', 'argument "payload_hash" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', '\x0011', gen_random_uuid(), '1 minute')$$, '22023', 'argument "payload_hash" must be a 32-byte SHA-256 digest, not 2 bytes'),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), NULL, '1 minute')$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), gen_random_uuid(), NULL)$$, '22004', 'argument "lease" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), gen_random_uuid(), '0')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  -- hash_payload
  ($$SELECT idemgate.hash_payload(NULL)$$, '22004', 'argument "payload" must not be NULL'),
  -- cas_transition
  ($$SELECT idemgate.cas_transition(NULL, gen_random_uuid(), 0, 'completed')$$, '22004', 'argument "key" must not be NULL'),
  ($$SELECT idemgate.cas_transition('bad-1', NULL, 0, 'completed')$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), NULL, 'completed')$$, '22004', 'argument "version" must not be NULL'),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, NULL)$$, '22004', 'argument "new_state" must not be NULL'),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, 'done')$$, '22023', 'argument "new_state" must be a run state, not "done"'),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, 'COMPLETED')$$, '22023', 'argument "new_state" must be a run state, not "COMPLETED"'),
  ($$SELECT idemgate.cas_transition('', gen_random_uuid(), 0, 'completed')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  -- renew_lease
  ($$SELECT idemgate.renew_lease(NULL, gen_random_uuid(), 0, '1 minute')$$, '22004', 'argument "key" must not be NULL'),
  ($$SELECT idemgate.renew_lease('bad-1', NULL, 0, '1 minute')$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), NULL, '1 minute')$$, '22004', 'argument "version" must not be NULL'),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, NULL)$$, '22004', 'argument "extend_by" must not be NULL'),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, '-1 minute')$$, '22023', 'argument "extend_by" must be greater than 0 s and at most 3600 s'),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, '2 hours')$$, '22023', 'argument "extend_by" must be greater than 0 s and at most 3600 s'),
  -- fail
  ($$SELECT idemgate.fail(NULL, gen_random_uuid(), 0, 'x', 'y', true)$$, '22004', 'argument "key" must not be NULL'),
  ($$SELECT idemgate.fail('bad-1', NULL, 0, 'x', 'y', true)$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), NULL, 'x', 'y', true)$$, '22004', 'argument "version" must not be NULL'),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, NULL, 'y', true)$$, '22004', 'argument "error_class" must not be NULL'),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, '', 'y', true)$$, '22023', 'argument "error_class" must be between 1 and 100 bytes long, not 0'),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, 'x', 'y', NULL)$$, '22004', 'argument "retryable" must not be NULL'),
  -- supersede
  ($$SELECT * FROM idemgate.supersede(NULL, 'b', '{}', 'op', 'why')$$, '22004', 'argument "original_key" must not be NULL'),
  ($$SELECT * FROM idemgate.supersede('a', NULL, '{}', 'op', 'why')$$, '22004', 'argument "new_key" must not be NULL'),
  ($$SELECT * FROM idemgate.supersede('a', 'b', NULL, 'op', 'why')$$, '22004', 'argument "payload" must not be NULL'),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', NULL, 'why')$$, '22004', 'argument "operator" must not be NULL'),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', '', 'why')$$, '22023', 'argument "operator" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', 'op', NULL)$$, '22004', 'argument "reason" must not be NULL'),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', 'op', 'why', '0')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.supersede('a', repeat('x', 600), '{}', 'op', 'why')$$, '22023', 'argument "new_key" must be between 1 and 512 bytes long, not 600'),
  -- grant_role / revoke_role
  ($$SELECT idemgate.grant_role(NULL, 'client')$$, '22004', 'argument "role" must not be NULL'),
  ($$SELECT idemgate.grant_role(current_user::regrole, NULL)$$, '22004', 'argument "bundle" must not be NULL'),
  ($$SELECT idemgate.grant_role(current_user::regrole, 'admin')$$, '22023', 'argument "bundle" must be client, approver, operator or reader, not "admin"'),
  ($$SELECT idemgate.revoke_role(current_user::regrole, 'root')$$, '22023', 'argument "bundle" must be client, approver, operator or reader, not "root"')
) AS t(q, code, msg);

-- Nothing was half-written by any of the failed calls.
SELECT is((SELECT count(*) FROM idemgate.runs) - :runs_before, 0::bigint, 'no run was written');
SELECT is((SELECT count(*) FROM idemgate.events) - :events_before, 0::bigint, 'no event was written');

-- Unicode keys are fine; 512 bytes is the limit, not 512 characters.
SELECT is((SELECT outcome FROM idemgate.claim(repeat('é', 256), '{}')), 'claimed', '256 two-byte characters (512 bytes) are a key');
SELECT is((SELECT outcome FROM idemgate.claim('bad-ключ-🔑', '{"emoji": "🔑"}')), 'claimed', 'a Unicode key is claimed');
SELECT is((SELECT outcome FROM idemgate.claim('bad-ключ-🔑', '{"emoji": "🔑"}')), 'duplicate', 'and is a duplicate the second time');
-- Large (under idemgate.max_document_size) and deep payloads hash and store fine.
SELECT is((SELECT outcome FROM idemgate.claim('bad-big', (SELECT jsonb_agg(g) FROM generate_series(1, 50000) g))),
          'claimed', 'a large payload is claimed');
SELECT is((SELECT outcome FROM idemgate.claim('bad-deep', (repeat('[', 5000) || repeat(']', 5000))::jsonb)),
          'claimed', 'a deeply nested payload is claimed');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
