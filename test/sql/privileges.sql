-- privileges: nothing for PUBLIC; rights come in the four bundles of README.md, "Roles"
-- through grant_role/revoke_role. A client gets 42501 for everything outside
-- its bundle: reading token hashes, consuming approvals, operator calls,
-- writing tables directly, or granting itself more. pgTAP; the test roles
-- call pgTAP themselves (SET ROLE / SET SESSION AUTHORIZATION), so they get
-- USAGE on schema tap and this session's pgTAP result tables, nothing of
-- idemgate.
\i test/sql/include/pgtap.psql
SELECT * FROM no_plan();
GRANT USAGE ON SCHEMA tap TO PUBLIC;
DO $$
BEGIN
  EXECUTE format('GRANT ALL ON ALL TABLES IN SCHEMA %s TO PUBLIC', pg_my_temp_schema()::regnamespace);
  EXECUTE format('GRANT ALL ON ALL SEQUENCES IN SCHEMA %s TO PUBLIC', pg_my_temp_schema()::regnamespace);
END $$;

-- Nothing is executable, readable or writable by PUBLIC.
SELECT is_empty($$SELECT oid::regprocedure FROM pg_proc
                   WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('public', oid, 'EXECUTE')$$,
                'no function executable by PUBLIC');
SELECT is_empty($$SELECT oid::regclass FROM pg_class
                   WHERE relnamespace = 'idemgate'::regnamespace AND relkind IN ('r', 'v', 'S')
                     AND (has_table_privilege('public', oid, 'SELECT') OR has_table_privilege('public', oid, 'INSERT')
                          OR has_table_privilege('public', oid, 'UPDATE') OR has_table_privilege('public', oid, 'DELETE'))$$,
                'no relation readable or writable by PUBLIC');
SELECT schema_privs_are('idemgate', 'public', ARRAY[]::text[], 'no USAGE on schema idemgate for PUBLIC');
-- Every SECURITY DEFINER function pins search_path; the operator bundle
-- holds every function of the extension but payload_hmac, the extension
-- owner's alone (a caller who could hash any value could confirm a
-- guessed payload: src/ledger/payload_hmac.c).
SELECT is_empty($$SELECT p.oid::regprocedure FROM pg_proc p
                   WHERE p.pronamespace = 'idemgate'::regnamespace AND p.prosecdef
                     AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false)$$,
                'every SECURITY DEFINER function pins search_path');
SELECT is_empty($$SELECT p.oid::regprocedure FROM pg_proc p
                   WHERE p.pronamespace = 'idemgate'::regnamespace
                     AND p.oid <> 'idemgate.payload_hmac(bytea)'::regprocedure
                     AND NOT EXISTS (SELECT 1 FROM idemgate.bundle_members b WHERE b.bundle = 'operator' AND b.fn::regprocedure = p.oid)$$,
                'the operator bundle holds every function');
-- No bundle may read the approvals table itself (token hashes).
SELECT is_empty($$SELECT bundle FROM idemgate.bundle_members WHERE rel = 'idemgate.approvals'::regclass$$,
                'no bundle reads the approvals table');
-- This feature's functions are in the bundles README.md, "Roles" names.
SELECT results_eq($$SELECT b.bundle, b.fn::text FROM idemgate.bundle_members b
                     WHERE b.fn::text ~ '(approval|hash_token|enqueue_effect)' ORDER BY b.fn::text, b.bundle$$,
                  $$VALUES ('operator', 'idemgate.cancel_approval(uuid,text,text)'),
                           ('approver', 'idemgate.consume_approval(jsonb)'),
                           ('operator', 'idemgate.consume_approval(jsonb)'),
                           ('approver', 'idemgate.consume_approval(text,text,text,text)'),
                           ('operator', 'idemgate.consume_approval(text,text,text,text)'),
                           ('client', 'idemgate.enqueue_effect(jsonb)'),
                           ('operator', 'idemgate.enqueue_effect(jsonb)'),
                           ('client', 'idemgate.enqueue_effect(text,uuid,bigint,jsonb)'),
                           ('operator', 'idemgate.enqueue_effect(text,uuid,bigint,jsonb)'),
                           ('operator', 'idemgate.expire_approvals()'),
                           ('approver', 'idemgate.hash_token(text)'),
                           ('client', 'idemgate.hash_token(text)'),
                           ('operator', 'idemgate.hash_token(text)'),
                           ('approver', 'idemgate.peek_approval(jsonb)'),
                           ('operator', 'idemgate.peek_approval(jsonb)'),
                           ('approver', 'idemgate.peek_approval(text)'),
                           ('operator', 'idemgate.peek_approval(text)'),
                           ('client', 'idemgate.request_approval(jsonb)'),
                           ('operator', 'idemgate.request_approval(jsonb)'),
                           ('client', 'idemgate.request_approval(text,uuid,bigint,jsonb,interval,jsonb,text[],text)'),
                           ('operator', 'idemgate.request_approval(text,uuid,bigint,jsonb,interval,jsonb,text[],text)')$$,
                  'the approval functions are in the bundles README.md, "Roles" names');

-- One role per bundle, and one with none.
CREATE ROLE privileges_client;
CREATE ROLE privileges_approver;
CREATE ROLE privileges_reader;
CREATE ROLE privileges_operator;
CREATE ROLE privileges_nobody;
SELECT idemgate.grant_role('privileges_client', 'client'), idemgate.grant_role('privileges_approver', 'approver'),
       idemgate.grant_role('privileges_reader', 'reader'), idemgate.grant_role('privileges_operator', 'operator') \g /dev/null
-- (pulling a type needs its grant since 1.1: test/sql/pull_grants.sql)
SELECT idemgate.grant_effect_type('privileges_client', 'privileges-none') \g /dev/null
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.grant_role('privileges_nobody', 'admin')$$, '22023',
   'argument "bundle" must be client, approver, operator or reader, not "admin"'),
  ($$SELECT idemgate.grant_role(NULL, 'client')$$, '22004', 'argument "role" must not be NULL'),
  ($$SELECT idemgate.grant_role('privileges_nobody', NULL)$$, '22004', 'argument "bundle" must not be NULL')
) AS t(q, code, m);

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
SELECT is_empty(format('SELECT * FROM pg_temp.rights_mismatch(%L, %L)', r, b), r || ' has exactly the ' || b || ' bundle')
FROM (VALUES ('privileges_client', 'client'), ('privileges_approver', 'approver'),
             ('privileges_reader', 'reader'), ('privileges_operator', 'operator')) AS t(r, b);
SELECT is_empty($$SELECT oid::regprocedure FROM pg_proc
                   WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('privileges_nobody', oid, 'EXECUTE')$$,
                'a role without a bundle executes nothing');
-- The approval functions per role, spelled out.
SELECT function_privs_are('idemgate', f, a, r, p, r || ' on ' || f) FROM (VALUES
  ('consume_approval', ARRAY['text', 'text', 'text', 'text'], 'privileges_client', ARRAY[]::text[]),
  ('consume_approval', ARRAY['text', 'text', 'text', 'text'], 'privileges_approver', ARRAY['EXECUTE']),
  ('consume_approval', ARRAY['text', 'text', 'text', 'text'], 'privileges_reader', ARRAY[]::text[]),
  ('consume_approval', ARRAY['text', 'text', 'text', 'text'], 'privileges_operator', ARRAY['EXECUTE']),
  ('consume_approval', ARRAY['text', 'text', 'text', 'text'], 'privileges_nobody', ARRAY[]::text[]),
  ('peek_approval', ARRAY['text'], 'privileges_client', ARRAY[]::text[]),
  ('peek_approval', ARRAY['text'], 'privileges_approver', ARRAY['EXECUTE']),
  ('request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'privileges_client', ARRAY['EXECUTE']),
  ('request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'privileges_approver', ARRAY[]::text[]),
  ('expire_approvals', ARRAY[]::text[], 'privileges_approver', ARRAY[]::text[]),
  ('expire_approvals', ARRAY[]::text[], 'privileges_operator', ARRAY['EXECUTE'])
) AS t(f, a, r, p);

-- A run awaiting approval, and its token.
SELECT lease_owner AS owner, version FROM idemgate.claim('privileges-1', '{"ticket": 1}') \gset
SELECT token AS token1 FROM idemgate.request_approval('privileges-1', :'owner', :version,
    '{"type": "email", "target": "ana@example.com", "payload": {}}', card => '{"title": "t"}') \gset

-- The client (as the session user, like a login from n8n): its own calls work ...
SET SESSION AUTHORIZATION privileges_client;
SELECT is((SELECT outcome FROM idemgate.claim('privileges-2', '{"ticket": 2}')), 'claimed', 'the client claims');
SELECT results_eq($$SELECT idemgate.hash_token('x') = idemgate.hash_token('x'), length(idemgate.hash_payload('{}')),
                           idemgate.actions_enabled() IS NOT NULL$$,
                  $$VALUES (true, 32, true)$$, 'the client hashes and reads the kill switch');
SELECT lives_ok($$SELECT * FROM idemgate.claim_effects('privileges-none', 1)$$, 'the client pulls a granted type');
SELECT lives_ok(format($$SELECT * FROM idemgate.enqueue_effect('privileges-2', %L, 0,
    '{"type": "email", "target": "x", "payload": {}}')$$,
    (SELECT lease_owner FROM idemgate.claim('privileges-3', '{"ticket": 3}'))), 'the client enqueues');
-- ... and everything else is 42501.
SELECT throws_ok(q, '42501', m, 'client: ' || what) FROM (VALUES
  ('read approvals.token_hash', 'SELECT token_hash FROM idemgate.approvals', 'permission denied for table approvals'),
  ('read approvals', 'SELECT count(*) FROM idemgate.approvals', 'permission denied for table approvals'),
  ('read approval_status', 'SELECT count(*) FROM idemgate.approval_status', 'permission denied for view approval_status'),
  ('peek_approval', format('SELECT * FROM idemgate.peek_approval(%L)', :'token1'), 'permission denied for function peek_approval'),
  ('consume_approval', format('SELECT * FROM idemgate.consume_approval(%L, ''approve'', ''mallory'')', :'token1'), 'permission denied for function consume_approval'),
  ('expire_approvals', 'SELECT idemgate.expire_approvals()', 'permission denied for function expire_approvals'),
  ('supersede', $$SELECT * FROM idemgate.supersede('privileges-1', 'privileges-1b', '{}', 'me', 'because')$$, 'permission denied for function supersede'),
  ('grant_role operator to itself', $$SELECT idemgate.grant_role('privileges_client', 'operator')$$, 'permission denied for function grant_role'),
  ('grant_role approver to itself', $$SELECT idemgate.grant_role('privileges_client', 'approver')$$, 'permission denied for function grant_role'),
  ('revoke_role', $$SELECT idemgate.revoke_role('privileges_approver', 'approver')$$, 'permission denied for function revoke_role'),
  ('GRANT EXECUTE consume_approval', 'GRANT EXECUTE ON FUNCTION idemgate.consume_approval(text, text, text, text) TO privileges_client', 'permission denied for function consume_approval'),
  ('GRANT SELECT approvals', 'GRANT SELECT ON idemgate.approvals TO privileges_client', 'permission denied for table approvals'),
  ('read events', 'SELECT count(*) FROM idemgate.events', 'permission denied for table events'),
  ('read dead_letters', 'SELECT count(*) FROM idemgate.dead_letters', 'permission denied for table dead_letters'),
  ('read endpoints', 'SELECT count(*) FROM idemgate.endpoints', 'permission denied for table endpoints'),
  ('read runs', 'SELECT count(*) FROM idemgate.runs', 'permission denied for table runs'),
  ('read outbox', 'SELECT count(*) FROM idemgate.outbox', 'permission denied for table outbox'),
  ('insert runs', $$INSERT INTO idemgate.runs (idempotency_key, state, payload_hash) VALUES ('privileges-x', 'approved', '\x00')$$, 'permission denied for table runs'),
  ('update runs', $$UPDATE idemgate.runs SET state = 'approved' WHERE idempotency_key = 'privileges-1'$$, 'permission denied for table runs'),
  ('delete runs', 'DELETE FROM idemgate.runs', 'permission denied for table runs'),
  ('insert outbox', $$INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload) VALUES (gen_random_uuid(), 'privileges-1', 'email', 'x', '{}')$$, 'permission denied for table outbox'),
  ('update outbox', $$UPDATE idemgate.outbox SET state = 'pending'$$, 'permission denied for table outbox'),
  ('insert approvals', $$INSERT INTO idemgate.approvals (approval_id, idempotency_key, token_hash, allowed_decisions, expires_at, effects, run_version) VALUES (gen_random_uuid(), 'privileges-1', idemgate.hash_token('mine'), '{approve}', now() + interval '1 day', '{}', 1)$$, 'permission denied for table approvals'),
  ('update approvals', $$UPDATE idemgate.approvals SET expires_at = now() + interval '1 year'$$, 'permission denied for table approvals'),
  ('register endpoint (table)', $$INSERT INTO idemgate.endpoints (effect_type, url) VALUES ('email', 'https://evil.example')$$, 'permission denied for table endpoints'),
  ('kill switch (table)', 'UPDATE idemgate.control SET actions_enabled = false', 'permission denied for table control'),
  ('add to a bundle', $$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('client', 'idemgate.consume_approval(text,text,text,text)')$$, 'permission denied for table bundle_members'),
  ('record a grant', $$INSERT INTO idemgate.granted_bundles (role, bundle) VALUES ('privileges_client', 'operator')$$, 'permission denied for table granted_bundles'),
  ('truncate events', 'TRUNCATE idemgate.events', 'permission denied for table events'),
  ('create in schema', 'CREATE TABLE idemgate.mine (x int)', 'permission denied for schema idemgate'),
  ('register_endpoint', $$SELECT idemgate.register_endpoint('email', 'https://evil.example/hook')$$, 'permission denied for function register_endpoint'),
  ('set_actions_enabled (kill switch)', $$SELECT idemgate.set_actions_enabled(false, 'client', 'test')$$, 'permission denied for function set_actions_enabled'),
  ('reinject', $$SELECT idemgate.reinject(1, 'client')$$, 'permission denied for function reinject'),
  ('reinject_all', $$SELECT idemgate.reinject_all('client')$$, 'permission denied for function reinject_all'),
  ('resolve_effect', $$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'client')$$, 'permission denied for function resolve_effect'),
  ('purge', $$SELECT idemgate.purge('1 day')$$, 'permission denied for function purge'),
  ('purge_dead_letters', $$SELECT idemgate.purge_dead_letters('1 day')$$, 'permission denied for function purge_dead_letters'),
  ('watch_workflow', $$SELECT idemgate.watch_workflow('w', '1 hour')$$, 'permission denied for function watch_workflow'),
  ('unwatch_workflow', $$SELECT idemgate.unwatch_workflow('w')$$, 'permission denied for function unwatch_workflow'),
  ('publish_alerts', 'SELECT idemgate.publish_alerts()', 'permission denied for function publish_alerts'),
  ('metrics', 'SELECT count(*) FROM idemgate.metrics()', 'permission denied for function metrics'),
  ('prometheus', 'SELECT idemgate.prometheus()', 'permission denied for function prometheus'),
  ('read alerts', 'SELECT count(*) FROM idemgate.alerts', 'permission denied for view alerts'),
  ('dispatcher_status', 'SELECT count(*) FROM idemgate.dispatcher_status()', 'permission denied for function dispatcher_status'),
  -- PostgreSQL words this one differently per major: the SQLSTATE only.
  ('ALTER ROLE itself SUPERUSER', 'ALTER ROLE privileges_client SUPERUSER', NULL),
  ('SET ROLE operator', 'SET ROLE privileges_operator', 'permission denied to set role "privileges_operator"')
) AS m(what, q, m);
SELECT is(current_user || ' / ' || session_user, 'privileges_client / privileges_client', 'still the client');
RESET SESSION AUTHORIZATION;
-- Nothing the client tried changed anything.
SELECT results_eq($$SELECT state, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'privileges-1'),
                           (SELECT consumed_at IS NULL FROM idemgate.approvals WHERE idempotency_key = 'privileges-1')
                      FROM idemgate.runs WHERE idempotency_key = 'privileges-1'$$,
                  $$VALUES ('awaiting_human', 0::bigint, true)$$, 'the run still awaits its unconsumed approval, no effects');
SELECT is_empty($$SELECT * FROM idemgate.bundle_members WHERE bundle = 'client' AND fn::text LIKE '%consume%'$$,
                'no stray bundle row');
SELECT results_eq($$SELECT (SELECT actions_enabled FROM idemgate.control), (SELECT count(*) FROM idemgate.endpoints WHERE url LIKE '%evil%')$$,
                  $$VALUES (true, 0::bigint)$$, 'the kill switch is still on, no evil endpoint');
SELECT results_eq($$SELECT bundle FROM idemgate.granted_bundles WHERE role = 'privileges_client'::regrole$$,
                  $$VALUES ('client')$$, 'the client still holds only client');

-- The approver: peek and consume, nothing else.
SET ROLE privileges_approver;
SELECT results_eq(format($$SELECT status, card->>'title' FROM idemgate.peek_approval(%L)$$, :'token1'),
                  $$VALUES ('pending', 't')$$, 'the approver peeks');
SELECT throws_ok(q, '42501', m, 'approver: ' || what) FROM (VALUES
  ('claim', $$SELECT * FROM idemgate.claim('privileges-9', '{}')$$, 'permission denied for function claim'),
  ('request_approval', $$SELECT * FROM idemgate.request_approval('privileges-1', gen_random_uuid(), 0, '{}')$$, 'permission denied for function request_approval'),
  ('read approvals', 'SELECT token_hash FROM idemgate.approvals', 'permission denied for table approvals'),
  ('read events', 'SELECT count(*) FROM idemgate.events', 'permission denied for table events'),
  ('expire_approvals', 'SELECT idemgate.expire_approvals()', 'permission denied for function expire_approvals')
) AS m(what, q, m);
SELECT results_eq(format($$SELECT outcome, idempotency_key FROM idemgate.consume_approval(%L, 'approve', 'alice')$$, :'token1'),
                  $$VALUES ('approved', 'privileges-1')$$, 'the approver consumes');
RESET ROLE;

-- The reader: the audit trail and the approval status, no token hashes.
SET ROLE privileges_reader;
SELECT results_eq($$SELECT status, decision, approver_subject FROM idemgate.approval_status WHERE idempotency_key = 'privileges-1'$$,
                  $$VALUES ('consumed', 'approve', 'alice')$$, 'the reader reads approval_status');
SELECT results_eq($$SELECT kind, actor FROM idemgate.events WHERE idempotency_key = 'privileges-1' AND kind = 'approval_decided'$$,
                  $$VALUES ('approval_decided', 'alice')$$, 'the reader reads events');
SELECT throws_ok(q, '42501', m, 'reader: ' || q) FROM (VALUES
  ('SELECT token_hash FROM idemgate.approvals', 'permission denied for table approvals'),
  ('SELECT 1 FROM idemgate.runs', 'permission denied for table runs'),
  ($$SELECT * FROM idemgate.peek_approval('x')$$, 'permission denied for function peek_approval')
) AS m(q, m);
RESET ROLE;

-- The operator may do everything the other bundles may.
SET ROLE privileges_operator;
SELECT lives_ok('SELECT count(*) FROM idemgate.events', 'the operator reads events');
SELECT ok(idemgate.expire_approvals() >= 0, 'the operator expires approvals');
SELECT is_empty($$SELECT * FROM idemgate.peek_approval('no such token')$$, 'the operator peeks');
RESET ROLE;

-- revoke_role: revoking client from a role that is also operator leaves it
-- every operator right (including the client functions, which operator holds).
CREATE ROLE privileges_both;
SELECT idemgate.grant_role('privileges_both', 'operator'), idemgate.grant_role('privileges_both', 'client') \g /dev/null
SELECT idemgate.revoke_role('privileges_both', 'client') \g /dev/null
SELECT is_empty($$SELECT * FROM pg_temp.rights_mismatch('privileges_both', 'operator')$$, 'operator + client - client: still operator');
SET ROLE privileges_both;
SELECT is((SELECT outcome FROM idemgate.claim('privileges-4', '{"ticket": 4}')), 'claimed', 'and still claims');
SELECT is_empty($$SELECT * FROM idemgate.peek_approval('no such token')$$, 'and still peeks');
RESET ROLE;
SELECT results_eq($$SELECT bundle FROM idemgate.granted_bundles WHERE role = 'privileges_both'::regrole$$,
                  $$VALUES ('operator')$$, 'its grant record says operator');

-- Revoking client from a client-only role takes its rights away; revoking
-- approver from a client + approver keeps hash_token (client has it too).
SELECT idemgate.grant_role('privileges_client', 'approver') \g /dev/null
SELECT idemgate.revoke_role('privileges_client', 'approver') \g /dev/null
SELECT is_empty($$SELECT * FROM pg_temp.rights_mismatch('privileges_client', 'client')$$, 'client + approver - approver: client');
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'privileges_client', ARRAY['EXECUTE'], 'hash_token kept');
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'privileges_client', ARRAY[]::text[], 'peek_approval gone');
SELECT idemgate.revoke_role('privileges_client', 'client') \g /dev/null
SET ROLE privileges_client;
-- (the schema's USAGE came with the bundle, so it is the first refusal)
SELECT throws_ok(q, '42501', 'permission denied for schema idemgate', 'without a bundle: ' || q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim('privileges-5', '{}')$$),
  ($$SELECT idemgate.hash_token('x')$$)
) AS m(q);
RESET ROLE;
SELECT is_empty($$SELECT oid::regprocedure FROM pg_proc
                   WHERE pronamespace = 'idemgate'::regnamespace AND has_function_privilege('privileges_client', oid, 'EXECUTE')$$,
                'client revoked: no function left');
SELECT is_empty($$SELECT * FROM idemgate.granted_bundles WHERE role = 'privileges_client'::regrole$$, 'no grant record left');

-- Grants and revokes are audited.
SELECT results_eq($$SELECT kind, details->>'bundle', actor = session_user FROM idemgate.events
                     WHERE kind IN ('role_granted', 'role_revoked') AND details->>'role' = 'privileges_both' ORDER BY id$$,
                  $$VALUES ('role_granted', 'operator', true), ('role_granted', 'client', true), ('role_revoked', 'client', true)$$,
                  'grants and revokes audited under the session user');

-- Granting twice is harmless (one record); revoking a bundle the role does
-- not hold changes nothing; revoking reader from an operator keeps the
-- audit trail readable (operator holds reader's relations too); an unknown
-- role is an error of the call.
SELECT idemgate.grant_role('privileges_reader', 'reader') \g /dev/null
SELECT is((SELECT count(*) FROM idemgate.granted_bundles WHERE role = 'privileges_reader'::regrole), 1::bigint, 'granted twice: one record');
SELECT idemgate.revoke_role('privileges_approver', 'client') \g /dev/null
SELECT is_empty($$SELECT * FROM pg_temp.rights_mismatch('privileges_approver', 'approver')$$, 'revoking a bundle not held changes nothing');
SELECT idemgate.grant_role('privileges_both', 'reader') \g /dev/null
SELECT idemgate.revoke_role('privileges_both', 'reader') \g /dev/null
SELECT table_privs_are('idemgate', 'events', 'privileges_both', ARRAY['SELECT'], 'operator - reader: events readable');
SELECT table_privs_are('idemgate', 'approval_status', 'privileges_both', ARRAY['SELECT'], 'operator - reader: approval_status readable');
SELECT table_privs_are('idemgate', 'approvals', 'privileges_both', ARRAY[]::text[], 'operator - reader: approvals not readable');
SELECT throws_ok($$SELECT idemgate.grant_role('privileges_no_such_role', 'client')$$, '42704', 'role "privileges_no_such_role" does not exist', 'an unknown role');

-- Clean up the roles.
SELECT idemgate.revoke_role('privileges_approver', 'approver'), idemgate.revoke_role('privileges_reader', 'reader'),
       idemgate.revoke_role('privileges_operator', 'operator'), idemgate.revoke_role('privileges_both', 'operator') \g /dev/null
SELECT is(idemgate.revoke_effect_type('privileges_client', 'privileges-none'), true, 'the pull grant is revoked');
SELECT * FROM finish();
REVOKE USAGE ON SCHEMA tap FROM PUBLIC;
DROP OWNED BY privileges_client, privileges_approver, privileges_reader, privileges_operator,
              privileges_nobody, privileges_both;
DROP ROLE privileges_client, privileges_approver, privileges_reader, privileges_operator,
          privileges_nobody, privileges_both;
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
