-- privileges: nothing for PUBLIC; rights come in the four bundles of SPEC §11
-- through grant_role/revoke_role. A client gets 42501 for everything outside
-- its bundle: reading token hashes, consuming approvals, operator calls,
-- writing tables directly, or granting itself more.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- code_of keeps only the SQLSTATE (messages name objects that vary by version).
CREATE FUNCTION pg_temp.code_of(q text) RETURNS text LANGUAGE sql AS $$
  SELECT left(pg_temp.sqlstate_of(q), 5) $$;

-- Nothing is executable, readable or writable by PUBLIC.
SELECT count(*) AS public_functions FROM pg_proc
WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('public', oid, 'EXECUTE');
SELECT count(*) AS public_relations FROM pg_class
WHERE relnamespace = 'idemgate'::regnamespace AND relkind IN ('r', 'v', 'S')
  AND (has_table_privilege('public', oid, 'SELECT') OR has_table_privilege('public', oid, 'INSERT')
       OR has_table_privilege('public', oid, 'UPDATE') OR has_table_privilege('public', oid, 'DELETE'));
SELECT has_schema_privilege('public', 'idemgate', 'USAGE') AS public_schema_usage;
-- Every SECURITY DEFINER function pins search_path; the operator bundle
-- holds every function of the extension.
SELECT p.oid::regprocedure AS unpinned FROM pg_proc p
WHERE p.pronamespace = 'idemgate'::regnamespace AND p.prosecdef
  AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false);
SELECT p.oid::regprocedure AS not_in_operator FROM pg_proc p
WHERE p.pronamespace = 'idemgate'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM idemgate.bundle_members b WHERE b.bundle = 'operator' AND b.fn::regprocedure = p.oid);
-- No bundle may read the approvals table itself (token hashes).
SELECT count(*) AS bundles_reading_approvals FROM idemgate.bundle_members WHERE rel = 'idemgate.approvals'::regclass;
-- This feature's functions are in the bundles SPEC §11 names.
SELECT b.bundle, b.fn FROM idemgate.bundle_members b
WHERE b.fn::text ~ '(approval|hash_token|enqueue_effect)' ORDER BY b.fn::text, b.bundle;

-- One role per bundle, and one with none.
CREATE ROLE privileges_client;
CREATE ROLE privileges_approver;
CREATE ROLE privileges_reader;
CREATE ROLE privileges_operator;
CREATE ROLE privileges_nobody;
SELECT idemgate.grant_role('privileges_client', 'client');
SELECT idemgate.grant_role('privileges_approver', 'approver');
SELECT idemgate.grant_role('privileges_reader', 'reader');
SELECT idemgate.grant_role('privileges_operator', 'operator');
-- (pulling a type needs its grant since 1.1: test/sql/pull_grants.sql)
SELECT idemgate.grant_effect_type('privileges_client', 'privileges-none');
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_role('privileges_nobody', 'admin')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_role(NULL, 'client')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_role('privileges_nobody', NULL)$$);

-- Each role can execute exactly its bundle's functions and read exactly its
-- bundle's relations (both differences must be empty).
CREATE FUNCTION pg_temp.rights_mismatch(p_role text, p_bundle text) RETURNS TABLE(what text, object text)
LANGUAGE sql AS $$
  (SELECT 'executable outside bundle', p.oid::regprocedure::text FROM pg_proc p
   WHERE p.pronamespace = 'idemgate'::regnamespace AND has_function_privilege(p_role, p.oid, 'EXECUTE')
   EXCEPT SELECT 'executable outside bundle', fn::text FROM idemgate.bundle_members WHERE bundle = p_bundle AND fn IS NOT NULL)
  UNION ALL
  (SELECT 'bundle not executable', fn::text FROM idemgate.bundle_members WHERE bundle = p_bundle AND fn IS NOT NULL
   AND NOT has_function_privilege(p_role, fn, 'EXECUTE'))
  UNION ALL
  (SELECT 'readable outside bundle', c.oid::regclass::text FROM pg_class c
   WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'v') AND has_table_privilege(p_role, c.oid, 'SELECT')
   EXCEPT SELECT 'readable outside bundle', rel::text FROM idemgate.bundle_members WHERE bundle = p_bundle AND rel IS NOT NULL)
  UNION ALL
  (SELECT 'writable', c.oid::regclass::text FROM pg_class c
   WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'v')
     AND (has_table_privilege(p_role, c.oid, 'INSERT') OR has_table_privilege(p_role, c.oid, 'UPDATE')
          OR has_table_privilege(p_role, c.oid, 'DELETE') OR has_table_privilege(p_role, c.oid, 'TRUNCATE')))
$$;
SELECT * FROM pg_temp.rights_mismatch('privileges_client', 'client');
SELECT * FROM pg_temp.rights_mismatch('privileges_approver', 'approver');
SELECT * FROM pg_temp.rights_mismatch('privileges_reader', 'reader');
SELECT * FROM pg_temp.rights_mismatch('privileges_operator', 'operator');
SELECT count(*) AS nobody_functions FROM pg_proc
WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('privileges_nobody', oid, 'EXECUTE');

-- A run awaiting approval, and its token.
SELECT lease_owner AS owner, version FROM idemgate.claim('privileges-1', '{"ticket": 1}') \gset
SELECT token AS token1 FROM idemgate.request_approval('privileges-1', :'owner', :version,
    '{"type": "email", "target": "ana@example.com", "payload": {}}', card => '{"title": "t"}') \gset

-- The client (as the session user, like a login from n8n): its own calls work ...
SET SESSION AUTHORIZATION privileges_client;
SELECT outcome FROM idemgate.claim('privileges-2', '{"ticket": 2}');
SELECT idemgate.hash_token('x') = idemgate.hash_token('x') AS hash_token,
       length(idemgate.hash_payload('{}')) AS hash_payload,
       idemgate.actions_enabled() IS NOT NULL AS actions_enabled;
SELECT count(*) >= 0 AS claim_effects FROM idemgate.claim_effects('privileges-none', 1);
SELECT pg_temp.code_of(format($$SELECT * FROM idemgate.enqueue_effect('privileges-2', %L, 0,
    '{"type": "email", "target": "x", "payload": {}}')$$,
    (SELECT lease_owner FROM idemgate.claim('privileges-3', '{"ticket": 3}'))));
-- ... and everything else is 42501.
SELECT what, pg_temp.code_of(q) AS sqlstate FROM (VALUES
  ('read approvals.token_hash', 'SELECT token_hash FROM idemgate.approvals'),
  ('read approvals', 'SELECT count(*) FROM idemgate.approvals'),
  ('read approval_status', 'SELECT count(*) FROM idemgate.approval_status'),
  ('peek_approval', format('SELECT * FROM idemgate.peek_approval(%L)', :'token1')),
  ('consume_approval', format('SELECT * FROM idemgate.consume_approval(%L, ''approve'', ''mallory'')', :'token1')),
  ('expire_approvals', 'SELECT idemgate.expire_approvals()'),
  ('supersede', $$SELECT * FROM idemgate.supersede('privileges-1', 'privileges-1b', '{}', 'me', 'because')$$),
  ('grant_role operator to itself', $$SELECT idemgate.grant_role('privileges_client', 'operator')$$),
  ('grant_role approver to itself', $$SELECT idemgate.grant_role('privileges_client', 'approver')$$),
  ('revoke_role', $$SELECT idemgate.revoke_role('privileges_approver', 'approver')$$),
  ('GRANT EXECUTE consume_approval', 'GRANT EXECUTE ON FUNCTION idemgate.consume_approval(text, text, text, text) TO privileges_client'),
  ('GRANT SELECT approvals', 'GRANT SELECT ON idemgate.approvals TO privileges_client'),
  ('read events', 'SELECT count(*) FROM idemgate.events'),
  ('read dead_letters', 'SELECT count(*) FROM idemgate.dead_letters'),
  ('read endpoints', 'SELECT count(*) FROM idemgate.endpoints'),
  ('read runs', 'SELECT count(*) FROM idemgate.runs'),
  ('read outbox', 'SELECT count(*) FROM idemgate.outbox'),
  ('insert runs', $$INSERT INTO idemgate.runs (idempotency_key, state, payload_hash) VALUES ('privileges-x', 'approved', '\x00')$$),
  ('update runs', $$UPDATE idemgate.runs SET state = 'approved' WHERE idempotency_key = 'privileges-1'$$),
  ('delete runs', 'DELETE FROM idemgate.runs'),
  ('insert outbox', $$INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload) VALUES (gen_random_uuid(), 'privileges-1', 'email', 'x', '{}')$$),
  ('update outbox', $$UPDATE idemgate.outbox SET state = 'pending'$$),
  ('insert approvals', $$INSERT INTO idemgate.approvals (approval_id, idempotency_key, token_hash, allowed_decisions, expires_at, effects, run_version) VALUES (gen_random_uuid(), 'privileges-1', idemgate.hash_token('mine'), '{approve}', now() + interval '1 day', '{}', 1)$$),
  ('update approvals', $$UPDATE idemgate.approvals SET expires_at = now() + interval '1 year'$$),
  ('register endpoint (table)', $$INSERT INTO idemgate.endpoints (effect_type, url) VALUES ('email', 'https://evil.example')$$),
  ('kill switch (table)', 'UPDATE idemgate.control SET actions_enabled = false'),
  ('add to a bundle', $$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('client', 'idemgate.consume_approval(text,text,text,text)')$$),
  ('record a grant', $$INSERT INTO idemgate.granted_bundles (role, bundle) VALUES ('privileges_client', 'operator')$$),
  ('truncate events', 'TRUNCATE idemgate.events'),
  ('create in schema', 'CREATE TABLE idemgate.mine (x int)'),
  ('register_endpoint', $$SELECT idemgate.register_endpoint('email', 'https://evil.example/hook')$$),
  ('set_actions_enabled (kill switch)', $$SELECT idemgate.set_actions_enabled(false, 'client', 'test')$$),
  ('reinject', $$SELECT idemgate.reinject(1, 'client')$$),
  ('reinject_all', $$SELECT idemgate.reinject_all('client')$$),
  ('resolve_effect', $$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'client')$$),
  ('purge', $$SELECT idemgate.purge('1 day')$$),
  ('purge_dead_letters', $$SELECT idemgate.purge_dead_letters('1 day')$$),
  ('watch_workflow', $$SELECT idemgate.watch_workflow('w', '1 hour')$$),
  ('unwatch_workflow', $$SELECT idemgate.unwatch_workflow('w')$$),
  ('publish_alerts', 'SELECT idemgate.publish_alerts()'),
  ('metrics', 'SELECT count(*) FROM idemgate.metrics()'),
  ('prometheus', 'SELECT idemgate.prometheus()'),
  ('read alerts', 'SELECT count(*) FROM idemgate.alerts'),
  ('dispatcher_status', 'SELECT count(*) FROM idemgate.dispatcher_status()'),
  ('ALTER ROLE itself SUPERUSER', 'ALTER ROLE privileges_client SUPERUSER'),
  ('SET ROLE operator', 'SET ROLE privileges_operator')
) AS m(what, q);
SELECT current_user, session_user;
RESET SESSION AUTHORIZATION;
-- Nothing the client tried changed anything.
SELECT state, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'privileges-1') AS effects,
       (SELECT consumed_at IS NULL FROM idemgate.approvals WHERE idempotency_key = 'privileges-1') AS unconsumed
FROM idemgate.runs WHERE idempotency_key = 'privileges-1';
SELECT count(*) AS stray_rows FROM idemgate.bundle_members WHERE bundle = 'client' AND fn::text LIKE '%consume%';
SELECT (SELECT actions_enabled FROM idemgate.control) AS kill_switch_still_on,
       (SELECT count(*) FROM idemgate.endpoints WHERE url LIKE '%evil%') AS evil_endpoints;
SELECT bundle FROM idemgate.granted_bundles WHERE role = 'privileges_client'::regrole;

-- The approver: peek and consume, nothing else.
SET ROLE privileges_approver;
SELECT status, card->>'title' AS title FROM idemgate.peek_approval(:'token1');
SELECT what, pg_temp.code_of(q) AS sqlstate FROM (VALUES
  ('claim', $$SELECT * FROM idemgate.claim('privileges-9', '{}')$$),
  ('request_approval', $$SELECT * FROM idemgate.request_approval('privileges-1', gen_random_uuid(), 0, '{}')$$),
  ('read approvals', 'SELECT token_hash FROM idemgate.approvals'),
  ('read events', 'SELECT count(*) FROM idemgate.events'),
  ('expire_approvals', 'SELECT idemgate.expire_approvals()')
) AS m(what, q);
SELECT outcome, idempotency_key FROM idemgate.consume_approval(:'token1', 'approve', 'alice');
RESET ROLE;

-- The reader: the audit trail and the approval status, no token hashes.
SET ROLE privileges_reader;
SELECT status, decision, approver_subject FROM idemgate.approval_status WHERE idempotency_key = 'privileges-1';
SELECT kind, actor FROM idemgate.events WHERE idempotency_key = 'privileges-1' AND kind = 'approval_decided';
SELECT pg_temp.code_of('SELECT token_hash FROM idemgate.approvals') AS approvals,
       pg_temp.code_of('SELECT 1 FROM idemgate.runs') AS runs,
       pg_temp.code_of($$SELECT * FROM idemgate.peek_approval('x')$$) AS peek;
RESET ROLE;

-- The operator may do everything the other bundles may.
SET ROLE privileges_operator;
SELECT count(*) >= 0 AS reads_events FROM idemgate.events;
SELECT idemgate.expire_approvals() >= 0 AS expires;
SELECT count(*) AS peek_rows FROM idemgate.peek_approval('no such token');
RESET ROLE;

-- revoke_role: revoking client from a role that is also operator leaves it
-- every operator right (including the client functions, which operator holds).
CREATE ROLE privileges_both;
SELECT idemgate.grant_role('privileges_both', 'operator');
SELECT idemgate.grant_role('privileges_both', 'client');
SELECT idemgate.revoke_role('privileges_both', 'client');
SELECT * FROM pg_temp.rights_mismatch('privileges_both', 'operator');
SET ROLE privileges_both;
SELECT outcome FROM idemgate.claim('privileges-4', '{"ticket": 4}');
SELECT count(*) AS peek_rows FROM idemgate.peek_approval('no such token');
RESET ROLE;
SELECT bundle FROM idemgate.granted_bundles WHERE role = 'privileges_both'::regrole;

-- Revoking client from a client-only role takes its rights away; revoking
-- approver from a client + approver keeps hash_token (client has it too).
SELECT idemgate.grant_role('privileges_client', 'approver');
SELECT idemgate.revoke_role('privileges_client', 'approver');
SELECT * FROM pg_temp.rights_mismatch('privileges_client', 'client');
SELECT has_function_privilege('privileges_client', 'idemgate.hash_token(text)', 'EXECUTE') AS hash_token,
       has_function_privilege('privileges_client', 'idemgate.peek_approval(text)', 'EXECUTE') AS peek;
SELECT idemgate.revoke_role('privileges_client', 'client');
SET ROLE privileges_client;
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim('privileges-5', '{}')$$) AS claim,
       pg_temp.code_of($$SELECT idemgate.hash_token('x')$$) AS hash_token;
RESET ROLE;
SELECT count(*) AS client_functions FROM pg_proc
WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('privileges_client', oid, 'EXECUTE');
SELECT count(*) AS remaining FROM idemgate.granted_bundles WHERE role = 'privileges_client'::regrole;

-- Grants and revokes are audited.
SELECT kind, details->>'bundle' AS bundle, actor = session_user AS by_session_user
FROM idemgate.events WHERE kind IN ('role_granted', 'role_revoked') AND details->>'role' = 'privileges_both'
ORDER BY id;

-- Granting twice is harmless (one record); revoking a bundle the role does
-- not hold changes nothing; revoking reader from an operator keeps the
-- audit trail readable (operator holds reader's relations too); an unknown
-- role is an error of the call.
SELECT idemgate.grant_role('privileges_reader', 'reader');
SELECT count(*) AS records FROM idemgate.granted_bundles WHERE role = 'privileges_reader'::regrole;
SELECT idemgate.revoke_role('privileges_approver', 'client');
SELECT * FROM pg_temp.rights_mismatch('privileges_approver', 'approver');
SELECT idemgate.grant_role('privileges_both', 'reader');
SELECT idemgate.revoke_role('privileges_both', 'reader');
SELECT has_table_privilege('privileges_both', 'idemgate.events', 'SELECT') AS events,
       has_table_privilege('privileges_both', 'idemgate.approval_status', 'SELECT') AS approval_status,
       has_table_privilege('privileges_both', 'idemgate.approvals', 'SELECT') AS approvals;
SELECT pg_temp.code_of($$SELECT idemgate.grant_role('privileges_no_such_role', 'client')$$) AS unknown_role;

-- Clean up the roles.
SELECT idemgate.revoke_role('privileges_approver', 'approver');
SELECT idemgate.revoke_role('privileges_reader', 'reader');
SELECT idemgate.revoke_role('privileges_operator', 'operator');
SELECT idemgate.revoke_role('privileges_both', 'operator');
SELECT idemgate.revoke_effect_type('privileges_client', 'privileges-none');
DROP OWNED BY privileges_client, privileges_approver, privileges_reader, privileges_operator,
              privileges_nobody, privileges_both;
DROP ROLE privileges_client, privileges_approver, privileges_reader, privileges_operator,
          privileges_nobody, privileges_both;
