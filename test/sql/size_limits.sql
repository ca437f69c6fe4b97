-- idemgate.max_document_size (SPEC §15, default 1 MB): payloads, cards,
-- effects (and so effect payloads), results and validated outputs larger
-- than the limit are refused with 54000 naming the argument and the limit,
-- and nothing is written. Before 1.1 a 10 MB payload, card or result was
-- accepted. Only a superuser may change the limit (check hook: >= 1 kB).
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- A JSON object holding n bytes of incompressible text (hex digests).
CREATE FUNCTION pg_temp.doc(n int) RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_build_object('x', left(string_agg(md5('sz' || i), ''), n)) FROM generate_series(1, n / 32 + 1) i $$;

SHOW idemgate.max_document_size;

-- At the default: a 2 MB payload is refused, nothing is written; 1,000,000
-- bytes pass.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('size-big', pg_temp.doc(2000000))$$);
SELECT count(*) AS big_runs FROM idemgate.runs WHERE idempotency_key = 'size-big';
SELECT outcome FROM idemgate.claim('size-ok', pg_temp.doc(1000000));

-- A smaller limit for the rest (superuser, this session).
SET idemgate.max_document_size = '4kB';
SHOW idemgate.max_document_size;
SELECT lease_owner AS owner, version FROM idemgate.claim('size-1', pg_temp.doc(3000)) \gset

SELECT what, pg_temp.sqlstate_of(q) FROM (VALUES
  ('claim', $$SELECT * FROM idemgate.claim('size-2', pg_temp.doc(5000))$$),
  ('claim(request)', $$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'size-3', 'payload', pg_temp.doc(5000)))$$),
  ('supersede', $$SELECT * FROM idemgate.supersede('size-1', 'size-4', pg_temp.doc(5000), 'ops', 'why')$$),
  ('cas_transition', format($$SELECT idemgate.cas_transition('size-1', %L, %s, 'completed', pg_temp.doc(5000))$$, :'owner', :version)),
  ('enqueue_effect', format($$SELECT * FROM idemgate.enqueue_effect('size-1', %L, %s,
      jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(5000)))$$, :'owner', :version)),
  ('request_approval effects', format($$SELECT * FROM idemgate.request_approval('size-1', %L, %s,
      jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(5000)))$$, :'owner', :version)),
  ('request_approval card', format($$SELECT * FROM idemgate.request_approval('size-1', %L, %s,
      '{"type": "size_mail", "target": "a", "payload": {}}', card => pg_temp.doc(5000))$$, :'owner', :version)),
  ('record_validation', format($$SELECT * FROM idemgate.record_validation('size-1', %L, %s, pg_temp.doc(5000), '{}')$$, :'owner', :version)),
  ('validate', $$SELECT * FROM idemgate.validate(pg_temp.doc(5000), '{}')$$)
) AS t(what, q);

-- Nothing was written: the run is as claimed, no effect, approval,
-- validation or superseding run.
SELECT state, version, result FROM idemgate.runs WHERE idempotency_key = 'size-1';
SELECT count(*) AS other_runs FROM idemgate.runs WHERE idempotency_key IN ('size-2', 'size-3', 'size-4');
SELECT count(*) AS effects FROM idemgate.outbox WHERE idempotency_key = 'size-1';
SELECT count(*) AS approvals FROM idemgate.approvals WHERE idempotency_key = 'size-1';

-- Under the limit every one of them works.
SELECT valid FROM idemgate.validate(pg_temp.doc(3000), '{}');
SELECT valid, attempt FROM idemgate.record_validation('size-1', :'owner', :version, pg_temp.doc(3000), '{}');
SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('size-1', :'owner', :version,
  jsonb_build_object('type', 'size_mail', 'target', 'a', 'payload', pg_temp.doc(3000)));

-- The limit: at least 1 kB, and only a superuser may change it.
SELECT pg_temp.sqlstate_of($$SET idemgate.max_document_size = 100$$);
CREATE ROLE size_client;
SELECT idemgate.grant_role('size_client', 'client');
SET ROLE size_client;
SELECT pg_temp.sqlstate_of($$SET idemgate.max_document_size = '1GB'$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim('size-5', pg_temp.doc(5000))$$);
RESET ROLE;
RESET idemgate.max_document_size;
SHOW idemgate.max_document_size;

SELECT idemgate.revoke_role('size_client', 'client');
DROP OWNED BY size_client;
DROP ROLE size_client;
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'size-%';
