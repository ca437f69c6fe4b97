-- Bad input to the run ledger: every argument checked, the right SQLSTATE,
-- a message naming the argument, and nothing half-written.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT count(*) AS runs_before FROM idemgate.runs \gset
SELECT count(*) AS events_before FROM idemgate.events \gset

SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
  -- claim: NULLs
  ($$SELECT * FROM idemgate.claim(NULL, '{}')$$),
  ($$SELECT * FROM idemgate.claim('bad-1', NULL)$$),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', NULL)$$),
  -- claim: key length, lease range
  ($$SELECT * FROM idemgate.claim('', '{}')$$),
  ($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$),
  ($$SELECT * FROM idemgate.claim(repeat('é', 257), '{}')$$),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '0 seconds')$$),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '-5 minutes')$$),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '2 hours')$$),
  ($$SELECT * FROM idemgate.claim('bad-1', '{}', '1 month')$$),
  -- claim(jsonb): missing and mistyped fields
  ($$SELECT * FROM idemgate.claim(NULL::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('[1, 2]'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"payload": {}}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1"}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": null}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": 42, "payload": {}}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "", "payload": {}}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": "soon"}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": 300}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "lease": "-1 minute"}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "owner": "not-a-uuid"}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "payload": {}, "workflow": ["x"]}'::jsonb)$$),
  ($$SELECT * FROM idemgate.claim('{"key": "bad-1", "paylaod": {}}'::jsonb)$$),
  -- claim_lease
  ($$SELECT * FROM idemgate.claim_lease(NULL, '\x00', gen_random_uuid(), '1 minute')$$),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', NULL, gen_random_uuid(), '1 minute')$$),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', '\x0011', gen_random_uuid(), '1 minute')$$),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), NULL, '1 minute')$$),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), gen_random_uuid(), NULL)$$),
  ($$SELECT * FROM idemgate.claim_lease('bad-1', idemgate.hash_payload('{}'), gen_random_uuid(), '0')$$),
  -- hash_payload
  ($$SELECT idemgate.hash_payload(NULL)$$),
  -- cas_transition
  ($$SELECT idemgate.cas_transition(NULL, gen_random_uuid(), 0, 'completed')$$),
  ($$SELECT idemgate.cas_transition('bad-1', NULL, 0, 'completed')$$),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), NULL, 'completed')$$),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, NULL)$$),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, 'done')$$),
  ($$SELECT idemgate.cas_transition('bad-1', gen_random_uuid(), 0, 'COMPLETED')$$),
  ($$SELECT idemgate.cas_transition('', gen_random_uuid(), 0, 'completed')$$),
  -- renew_lease
  ($$SELECT idemgate.renew_lease(NULL, gen_random_uuid(), 0, '1 minute')$$),
  ($$SELECT idemgate.renew_lease('bad-1', NULL, 0, '1 minute')$$),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), NULL, '1 minute')$$),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, NULL)$$),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, '-1 minute')$$),
  ($$SELECT idemgate.renew_lease('bad-1', gen_random_uuid(), 0, '2 hours')$$),
  -- fail
  ($$SELECT idemgate.fail(NULL, gen_random_uuid(), 0, 'x', 'y', true)$$),
  ($$SELECT idemgate.fail('bad-1', NULL, 0, 'x', 'y', true)$$),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), NULL, 'x', 'y', true)$$),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, NULL, 'y', true)$$),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, '', 'y', true)$$),
  ($$SELECT idemgate.fail('bad-1', gen_random_uuid(), 0, 'x', 'y', NULL)$$),
  -- supersede
  ($$SELECT * FROM idemgate.supersede(NULL, 'b', '{}', 'op', 'why')$$),
  ($$SELECT * FROM idemgate.supersede('a', NULL, '{}', 'op', 'why')$$),
  ($$SELECT * FROM idemgate.supersede('a', 'b', NULL, 'op', 'why')$$),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', NULL, 'why')$$),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', '', 'why')$$),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', 'op', NULL)$$),
  ($$SELECT * FROM idemgate.supersede('a', 'b', '{}', 'op', 'why', '0')$$),
  ($$SELECT * FROM idemgate.supersede('a', repeat('x', 600), '{}', 'op', 'why')$$),
  -- grant_role / revoke_role
  ($$SELECT idemgate.grant_role(NULL, 'client')$$),
  ($$SELECT idemgate.grant_role(current_user::regrole, NULL)$$),
  ($$SELECT idemgate.grant_role(current_user::regrole, 'admin')$$),
  ($$SELECT idemgate.revoke_role(current_user::regrole, 'root')$$)
) AS t(q);

-- Nothing was half-written by any of the failed calls.
SELECT count(*) - :runs_before AS new_runs FROM idemgate.runs;
SELECT count(*) - :events_before AS new_events FROM idemgate.events;

-- Unicode keys are fine; 512 bytes is the limit, not 512 characters.
SELECT outcome FROM idemgate.claim(repeat('é', 256), '{}');
SELECT outcome FROM idemgate.claim('bad-ключ-🔑', '{"emoji": "🔑"}');
SELECT outcome FROM idemgate.claim('bad-ключ-🔑', '{"emoji": "🔑"}');
-- Large (under idemgate.max_document_size) and deep payloads hash and store fine.
SELECT outcome FROM idemgate.claim('bad-big', (SELECT jsonb_agg(g) FROM generate_series(1, 50000) g));
SELECT outcome FROM idemgate.claim('bad-deep', (repeat('[', 5000) || repeat(']', 5000))::jsonb);
