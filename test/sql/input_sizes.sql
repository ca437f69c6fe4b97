-- Hostile input found by QA: values that used to leak an internal SQLSTATE
-- (54000 index row too big, 42704) instead of 22023 naming the argument, and
-- nothing half-written when they are refused.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- n bytes of incompressible text (hex digests), so TOAST cannot shrink it.
CREATE FUNCTION pg_temp.noise(n int) RETURNS text LANGUAGE sql AS $$
SELECT left(string_agg(md5('qa' || i), ''), n) FROM generate_series(1, n / 32 + 1) i $$;

-- workflow is indexed (runs.workflow): 1..200 bytes, both claim forms.
SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(9000))$$),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(3000))$$),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', pg_temp.noise(201))$$),
  ($$SELECT * FROM idemgate.claim('input_sizes-wf1', '{}', '1 minute', '')$$),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf1', 'payload', '{}'::jsonb, 'workflow', pg_temp.noise(9000)))$$),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf1', 'payload', '{}'::jsonb, 'workflow', ''))$$)
) AS t(q);
SELECT count(*) AS wf_runs FROM idemgate.runs WHERE idempotency_key = 'input_sizes-wf1';
SELECT outcome, state FROM idemgate.claim('input_sizes-wf2', '{}', '1 minute', pg_temp.noise(200));
SELECT outcome, state FROM idemgate.claim(jsonb_build_object('key', 'input_sizes-wf3', 'payload', '{}'::jsonb, 'workflow', pg_temp.noise(200)));

-- An effect's (key, type, target) is the outbox's unique index: a 512-byte
-- key, a 200-byte type and the longest target must fit (at most 1024 bytes).
CREATE TEMP TABLE qa_run AS
  SELECT 'input_sizes-' || pg_temp.noise(500) AS k, NULL::uuid AS owner, NULL::bigint AS version;
UPDATE qa_run SET (owner, version) = (SELECT c.lease_owner, c.version FROM idemgate.claim(qa_run.k, '{}') c);
SELECT octet_length(k) AS key_bytes FROM qa_run;
SELECT pg_temp.sqlstate_of(format($$SELECT * FROM idemgate.enqueue_effect(%L, %L, %s,
  jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(2048), 'payload', '{}'::jsonb))$$, k, owner, version)) AS target_2048
FROM qa_run;
SELECT pg_temp.sqlstate_of(format($$SELECT * FROM idemgate.request_approval(%L, %L, %s,
  jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(1025), 'payload', '{}'::jsonb))$$, k, owner, version)) AS target_1025
FROM qa_run;
SELECT (SELECT state FROM idemgate.runs r WHERE r.idempotency_key = k) AS state_after_refusal,
       (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key = k) AS effects,
       (SELECT count(*) FROM idemgate.approvals a WHERE a.idempotency_key = k) AS approvals
FROM qa_run;
-- The longest allowed target goes through the approval path into the outbox.
CREATE TEMP TABLE qa_appr AS
  SELECT a.* FROM qa_run, LATERAL idemgate.request_approval(k, owner, version,
    jsonb_build_object('type', pg_temp.noise(200), 'target', pg_temp.noise(1024), 'payload', '{}'::jsonb)) a;
SELECT c.outcome, cardinality(c.effect_ids) AS effects
FROM qa_appr, LATERAL idemgate.consume_approval(qa_appr.token, 'approve', 'qa-approver') c;

-- grant_role / revoke_role: a role OID that names no role is 22023.
SELECT q, pg_temp.sqlstate_of(q) FROM (VALUES
  ($$SELECT idemgate.grant_role(0::regrole, 'client')$$),
  ($$SELECT idemgate.grant_role(4000000000::oid::regrole, 'reader')$$),
  ($$SELECT idemgate.revoke_role(0::regrole, 'client')$$)
) AS t(q);
SELECT count(*) AS role_events FROM idemgate.events
WHERE kind IN ('role_granted', 'role_revoked') AND details->>'role' IS NULL;
