-- idemgate.max_document_size (README.md, "Security", default 1 MB): payloads, cards,
-- effects (and so effect payloads), results and validated outputs larger
-- than the limit are refused with 54000 naming the argument and the limit,
-- and nothing is written. Before 1.1 a 10 MB payload, card or result was
-- accepted. Only a superuser may change the limit (check hook: >= 1 kB).
-- pgTAP.
\i test/sql/include/pgtap.psql
-- A JSON object holding n bytes of incompressible text (hex digests).
CREATE FUNCTION pg_temp.doc(n int) RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_build_object('x', left(string_agg(md5('sz' || i), ''), n)) FROM generate_series(1, n / 32 + 1) i $$;
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

SELECT is(current_setting('idemgate.max_document_size'), '1MB', 'the default limit is 1 MB');

-- At the default: a 2 MB payload is refused, nothing is written; 1,000,000
-- bytes pass.
SELECT throws_ok($$SELECT * FROM idemgate.claim('size-big', pg_temp.doc(2000000))$$,
                 '54000', 'argument "payload" is too large: 2000013 bytes, the limit is 1048576 bytes', 'a 2 MB payload is refused');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'size-big'), 0::bigint, 'no run written');
SELECT is((SELECT outcome FROM idemgate.claim('size-ok', pg_temp.doc(1000000))), 'claimed', '1,000,000 bytes pass');

-- A smaller limit for the rest (superuser, this session).
SET idemgate.max_document_size = '4kB';
SELECT is(current_setting('idemgate.max_document_size'), '4kB', 'the limit is now 4 kB');
SELECT lease_owner AS owner, version FROM idemgate.claim('size-1', pg_temp.doc(3000)) \gset

SELECT throws_ok(q, '54000', m, what) FROM (VALUES
  ('claim', $$SELECT * FROM idemgate.claim('size-2', pg_temp.doc(5000))$$,
   'argument "payload" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('claim(request)', $$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'size-3', 'payload', pg_temp.doc(5000)))$$,
   'argument "payload" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('supersede', $$SELECT * FROM idemgate.supersede('size-1', 'size-4', pg_temp.doc(5000), 'ops', 'why')$$,
   'argument "payload" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('cas_transition', format($$SELECT idemgate.cas_transition('size-1', %L, %s, 'completed', pg_temp.doc(5000))$$, :'owner', :version),
   'argument "result" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('enqueue_effect', format($$SELECT * FROM idemgate.enqueue_effect('size-1', %L, %s,
      jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(5000)))$$, :'owner', :version),
   'argument "effects" is too large: 5069 bytes, the limit is 4096 bytes'),
  ('request_approval effects', format($$SELECT * FROM idemgate.request_approval('size-1', %L, %s,
      jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(5000)))$$, :'owner', :version),
   'argument "effects" is too large: 5069 bytes, the limit is 4096 bytes'),
  ('request_approval card', format($$SELECT * FROM idemgate.request_approval('size-1', %L, %s,
      '{"type": "size_mail", "target": "a", "payload": {}}', card => pg_temp.doc(5000))$$, :'owner', :version),
   'argument "card" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('record_validation', format($$SELECT * FROM idemgate.record_validation('size-1', %L, %s, pg_temp.doc(5000), '{}')$$, :'owner', :version),
   'argument "output" is too large: 5013 bytes, the limit is 4096 bytes'),
  ('validate', $$SELECT * FROM idemgate.validate(pg_temp.doc(5000), '{}')$$,
   'argument "output" is too large: 5013 bytes, the limit is 4096 bytes')
) AS t(what, q, m);

-- Nothing was written: the run is as claimed, no effect, approval,
-- validation or superseding run.
SELECT results_eq($$SELECT state, version, result FROM idemgate.runs WHERE idempotency_key = 'size-1'$$,
                  $$VALUES ('processing', 0::bigint, NULL::jsonb)$$, 'the run is as claimed');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key IN ('size-2', 'size-3', 'size-4')), 0::bigint, 'no other run');
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'size-1'), 0::bigint, 'no effect');
SELECT is((SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'size-1'), 0::bigint, 'no approval');

-- Under the limit every one of them works.
SELECT is((SELECT valid FROM idemgate.validate(pg_temp.doc(3000), '{}')), true, 'validate under the limit');
SELECT results_eq(format($$SELECT valid, attempt FROM idemgate.record_validation('size-1', %L, %s, pg_temp.doc(3000), '{}')$$, :'owner', :version),
                  $$VALUES (true, 1)$$, 'record_validation under the limit');
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('size-1', :'owner', :version,
             jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(3000)))), 1, 'enqueue_effect under the limit');

-- The limit: at least 1 kB, and only a superuser may change it.
SELECT throws_ok($$SET idemgate.max_document_size = 100$$,
                 '22023', 'invalid value for parameter "idemgate.max_document_size": 100', 'less than 1 kB is refused');
CREATE ROLE size_client;
SELECT idemgate.grant_role('size_client', 'client') \g /dev/null
SELECT throws_ok($$SELECT pg_temp.as_role('size_client', $q$SET idemgate.max_document_size = '1GB'$q$)$$,
                 '42501', 'permission denied to set parameter "idemgate.max_document_size"', 'a client may not raise the limit');
SELECT throws_ok($$SELECT pg_temp.as_role('size_client', $q$SELECT outcome FROM idemgate.claim('size-5', pg_temp.doc(5000))$q$)$$,
                 '54000', 'argument "payload" is too large: 5013 bytes, the limit is 4096 bytes', 'and is held to it');
RESET idemgate.max_document_size;
SELECT is(current_setting('idemgate.max_document_size'), '1MB', 'back to 1 MB');

SELECT idemgate.revoke_role('size_client', 'client') \g /dev/null
DROP OWNED BY size_client;
DROP ROLE size_client;
DELETE FROM idemgate.outbox WHERE idempotency_key LIKE 'size-%';
DELETE FROM idemgate.approvals WHERE idempotency_key LIKE 'size-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'size-%';

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
