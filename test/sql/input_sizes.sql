-- Hostile input found by QA: values that used to leak an internal SQLSTATE
-- (54000 index row too big, 42704) instead of 22023 naming the argument, and
-- nothing half-written when they are refused. pgTAP.
\i test/sql/include/pgtap.psql
-- n bytes of incompressible text (hex digests), so TOAST cannot shrink it.
CREATE FUNCTION pg_temp.noise(n int) RETURNS text LANGUAGE sql AS $$
SELECT left(string_agg(md5('qa' || i), ''), n) FROM generate_series(1, n / 32 + 1) i $$;
SELECT * FROM no_plan();

-- workflow is indexed (runs.workflow): 1..200 bytes, both claim forms.
SELECT throws_ok(q, '22023', msg, q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(9000))$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 9000'),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(3000))$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 3000'),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(201))$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 201'),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', '')$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf1', 'payload', '{}'::jsonb, 'workflow', pg_temp.noise(9000)))$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 9000'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf1', 'payload', '{}'::jsonb, 'workflow', ''))$$,
   'argument "workflow" must be between 1 and 200 bytes long, not 0')
) AS t(q, msg);
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'input_sizes-wf1'), 0::bigint,
          'no run for the refused workflows');
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim('input_sizes-wf2', '{}', '1 minute', pg_temp.noise(200))$$,
                  $$VALUES ('claimed', 'processing')$$, 'a 200-byte workflow is claimed');
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf3', 'payload', '{}'::jsonb, 'workflow', pg_temp.noise(200)))$$,
                  $$VALUES ('claimed', 'processing')$$, 'a 200-byte workflow is claimed (jsonb form)');

-- An effect's (key, type, target) is the outbox's unique index: a 512-byte
-- key, a 200-byte type and the longest target must fit (at most 1024 bytes).
CREATE TEMP TABLE qa_run AS
  SELECT 'input_sizes-' || pg_temp.noise(500) AS k, NULL::uuid AS owner, NULL::bigint AS version;
UPDATE qa_run SET (owner, version) = (SELECT c.lease_owner, c.version FROM idemgate.claim(qa_run.k, '{}') c);
SELECT is(octet_length(k), 512, 'the key is 512 bytes') FROM qa_run;
SELECT throws_ok(format($$SELECT * FROM idemgate.enqueue_effect(%L, %L, %s,
  jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(2048), 'payload', '{}'::jsonb))$$, k, owner, version),
  '22023', 'effects.target must be a JSON string of 1 to 1024 bytes', 'enqueue_effect: a 2048-byte target')
FROM qa_run;
SELECT throws_ok(format($$SELECT * FROM idemgate.request_approval(%L, %L, %s,
  jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(1025), 'payload', '{}'::jsonb))$$, k, owner, version),
  '22023', 'effects.target must be a JSON string of 1 to 1024 bytes', 'request_approval: a 1025-byte target')
FROM qa_run;
SELECT results_eq($$SELECT (SELECT state FROM idemgate.runs r WHERE r.idempotency_key = k),
                           (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key = k),
                           (SELECT count(*) FROM idemgate.approvals a WHERE a.idempotency_key = k)
                      FROM qa_run$$,
                  $$VALUES ('processing', 0::bigint, 0::bigint)$$,
                  'after the refusals the run is still processing, with no effect and no approval');
-- The longest allowed target goes through the approval path into the outbox.
CREATE TEMP TABLE qa_appr AS
  SELECT a.* FROM qa_run, LATERAL idemgate.request_approval(k, owner, version,
    jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(1024), 'payload', '{}'::jsonb)) a;
SELECT results_eq($$SELECT c.outcome, cardinality(c.effect_ids)
                      FROM qa_appr, LATERAL idemgate.consume_approval(qa_appr.token, 'approve', 'qa-approver') c$$,
                  $$VALUES ('approved', 1)$$, 'a 1024-byte target is approved into the outbox');

-- grant_role / revoke_role: a role OID that names no role is 42704 (1.3; 22023 before).
SELECT throws_ok(q, '42704', msg, q) FROM (VALUES
  ($$SELECT idemgate.grant_role(0::regrole, 'client')$$, 'argument "role" must name an existing role, not OID 0'),
  ($$SELECT idemgate.grant_role(4000000000::oid::regrole, 'reader')$$,
   'argument "role" must name an existing role, not OID 4000000000'),
  ($$SELECT idemgate.revoke_role(0::regrole, 'client')$$, 'argument "role" must name an existing role, not OID 0')
) AS t(q, msg);
SELECT is((SELECT count(*) FROM idemgate.events
            WHERE kind IN ('role_granted', 'role_revoked') AND details->>'role' IS NULL), 0::bigint,
          'no role event without a role');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
