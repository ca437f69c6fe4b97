-- rerun: register_rerun and the re-post of a reinjected run's input
-- (src/operations/rerun.c, README.md "Dead letters"). register_rerun checks the URL
-- like register_endpoint (https, or http only to listed hosts; no
-- non-public address unless listed; no user info), its headers and
-- timeout, and is audited without the host; only operators call it.
-- Reinjecting a run's dead letter moves the run back to failed_retryable
-- as before and, when its workflow has a re-run endpoint, puts one effect
-- of type idemgate.rerun:<workflow> (payload: the run's input, target: its
-- key) in the outbox under an approved carrier run; the re-posted input
-- then recovers the run through claim. Without an endpoint, a workflow or
-- a stored input, nothing is re-posted. Everything runs in one transaction
-- that is rolled back, so the running dispatcher never sees an endpoint
-- (TAP test 140_rerun delivers one to a loopback sink). pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
BEGIN;
CREATE ROLE rr_client; CREATE ROLE rr_reader;
SELECT idemgate.grant_role('rr_client', 'client'), idemgate.grant_role('rr_reader', 'reader') \g /dev/null
-- dead(key, workflow, payload) claims a run and fails it terminally: its dead letter id.
CREATE FUNCTION pg_temp.dead(k text, wf text, p jsonb) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c record; id bigint;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, p, '1 hour', wf);
  PERFORM idemgate.fail(k, c.lease_owner, c.version, 'model', 'bad output', false);
  SELECT d.id INTO id FROM idemgate.dead_letters d WHERE d.idempotency_key = k AND d.kind = 'run';
  RETURN id;
END $$;
SELECT * FROM no_plan();

-- Bad input: 22004 / 22023 naming the argument, 42501 for a non-operator;
-- nothing is registered.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.register_rerun(NULL, 'https://n8n.example/webhook/rerun')$$, '22004', 'argument "workflow" must not be NULL'),
  ($$SELECT idemgate.register_rerun('', 'https://n8n.example/webhook/rerun')$$, '22023', 'argument "workflow" must be between 1 and 185 bytes long, not 0'),
  ($$SELECT idemgate.register_rerun(repeat('w', 186), 'https://n8n.example/webhook/rerun')$$, '22023',
   'argument "workflow" must be between 1 and 185 bytes long, not 186'),
  ($$SELECT idemgate.register_rerun('rr-wf', NULL)$$, '22004', 'argument "url" must not be NULL'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'ftp://n8n.example/rerun')$$, '22023',
   'argument "url" is not allowed: its scheme is ftp; only https (or http to allowed hosts) is allowed'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'http://n8n.example/rerun')$$, '22023',
   'argument "url" is not allowed: plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to n8n.example'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://user:secret@n8n.example/rerun')$$, '22023',
   'argument "url" is not allowed: it contains user information; put credentials in the endpoint''s headers instead'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'not a url')$$, '22023', NULL),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', NULL)$$, '22004', 'argument "headers" must not be NULL'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', '{"Idempotency-Key": "x"}')$$, '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', '[]')$$, '22023', 'argument "headers" must be a JSON object'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', '{}', NULL)$$, '22004', 'argument "timeout" must not be NULL'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', '{}', '0 s')$$, '22023',
   'argument "timeout" must be greater than 0 s and at most 300 s'),
  ($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/rerun', '{}', '301 s')$$, '22023',
   'argument "timeout" must be greater than 0 s and at most 300 s')
) AS t(q, code, m);
-- A non-public address is refused unless its host is listed (like register_endpoint).
SELECT throws_like($$SELECT idemgate.register_rerun('rr-wf', 'https://10.1.2.3/rerun')$$,
                   'argument "url" is not allowed: %only hosts listed in idemgate.allowed_http_hosts may be non-public',
                   'a private address is refused');
SELECT throws_ok($$SELECT pg_temp.as_role('rr_client', 'SELECT idemgate.register_rerun(''rr-wf'', ''https://n8n.example/rerun'')')$$,
                 '42501', NULL, 'a client may not register a re-run endpoint');
-- The re-run type is idemgate's own: register_endpoint refuses it.
SELECT throws_ok($$SELECT idemgate.register_endpoint('idemgate.rerun:rr-wf', 'https://n8n.example/rerun')$$, '22023',
                 'effect type "idemgate.rerun:rr-wf" is reserved', 'register_endpoint refuses a reserved type');
SELECT is_empty($$SELECT 1 FROM idemgate.endpoints WHERE effect_type LIKE 'idemgate.%'$$, 'nothing was registered');

-- Registered: the endpoint of type idemgate.rerun:<workflow>, honouring the
-- key (the workflow's claim dedupes), three attempts; audited with the
-- scheme and a fingerprint of the host, never the host or path.
SELECT lives_ok($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.internal.example/webhook/rerun-secret', '{"X-Auth": "s3cret"}', '30 seconds')$$,
                'register_rerun');
SELECT results_eq($$SELECT url, timeout, max_attempts, honors_idempotency_key, headers FROM idemgate.endpoints WHERE effect_type = 'idemgate.rerun:rr-wf'$$,
                  $$VALUES ('https://n8n.internal.example/webhook/rerun-secret', interval '30 seconds', 3, true, '{"X-Auth": "s3cret"}'::jsonb)$$,
                  'an endpoint of type idemgate.rerun:rr-wf');
SELECT results_eq($$SELECT actor, details - 'host_sha256', length(details->>'host_sha256') > 0 FROM idemgate.events WHERE kind = 'rerun_registered'$$,
                  $$VALUES (current_user::text COLLATE "default", '{"scheme": "https", "created": true, "workflow": "rr-wf", "timeout_ms": 30000,
                                                  "effect_type": "idemgate.rerun:rr-wf", "header_names": ["X-Auth"]}'::jsonb, true)$$,
                  'audited: scheme and host fingerprint, header names');
SELECT is_empty($$SELECT 1 FROM idemgate.events WHERE kind = 'rerun_registered'
                     AND (details::text LIKE '%internal%' OR details::text LIKE '%secret%' OR details::text LIKE '%s3cret%')$$,
                'no host, path or header value in the event');
SELECT lives_ok($$SELECT idemgate.register_rerun('rr-wf', 'https://n8n.example/webhook/rerun')$$, 'registered again (replaced)');
SELECT results_eq($$SELECT url, timeout, headers FROM idemgate.endpoints WHERE effect_type = 'idemgate.rerun:rr-wf'$$,
                  $$VALUES ('https://n8n.example/webhook/rerun', interval '10 seconds', '{}'::jsonb)$$, 'replaced, defaults applied');
SELECT is((SELECT details->>'created' FROM idemgate.events WHERE kind = 'rerun_registered' ORDER BY id DESC LIMIT 1), 'false',
          'the second event says it replaced one');

-- Reinject a run's dead letter: the run goes back to failed_retryable as
-- before, and its input is in the outbox for the re-run endpoint, under an
-- approved carrier run named after the dead letter.
CREATE TEMP TABLE dl AS SELECT pg_temp.dead('rr-inv-1', 'rr-wf', '{"invoice": 4471, "customer": "ACME", "lines": [1, 2]}') AS id;
SELECT ok(idemgate.reinject((SELECT id FROM dl), 'ops'), 'reinject: true');
SELECT results_eq($$SELECT state, failures FROM idemgate.runs WHERE idempotency_key = 'rr-inv-1'$$,
                  $$VALUES ('failed_retryable', 0)$$, 'the run is failed_retryable, its failures reset');
SELECT results_eq($$SELECT r.state, r.workflow, r.payload, r.lease_owner, r.payload_hash = idemgate.hash_payload('{"invoice": 4471, "customer": "ACME", "lines": [1, 2]}')
                      FROM idemgate.runs r, dl WHERE r.idempotency_key = 'idemgate.rerun:' || dl.id$$,
                  $$VALUES ('approved', NULL::text, NULL::jsonb, NULL::uuid, true)$$,
                  'a carrier run, approved, without workflow, payload or lease');
SELECT results_eq($$SELECT o.effect_type, o.target, o.payload, o.state, o.attempts, o.next_attempt_at <= now(), o.cancel_until
                      FROM idemgate.outbox o, dl WHERE o.idempotency_key = 'idemgate.rerun:' || dl.id$$,
                  $$VALUES ('idemgate.rerun:rr-wf', 'rr-inv-1', '{"invoice": 4471, "customer": "ACME", "lines": [1, 2]}'::jsonb,
                            'pending', 0, true, NULL::timestamptz)$$,
                  'one pending effect: the run''s input, for the re-run endpoint, due now');
SELECT results_eq($$SELECT e.actor, e.details->>'dead_letter_id' = dl.id::text, e.details->>'rerun_key' = 'idemgate.rerun:' || dl.id,
                           (e.details->>'rerun_effect_id')::uuid = (SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'idemgate.rerun:' || dl.id),
                           e.details->>'to', e.details ? 'payload'
                      FROM idemgate.events e, dl WHERE e.idempotency_key = 'rr-inv-1' AND e.kind = 'run_reinjected'$$,
                  $$VALUES ('ops', true, true, true, 'failed_retryable', false)$$,
                  'run_reinjected names the carrier and the effect, not the input');
SELECT results_eq($$SELECT count(*) FROM idemgate.effect_types WHERE effect_type = 'idemgate.rerun:rr-wf' AND due = 1 AND has_endpoint$$,
                  $$VALUES (1::bigint)$$, 'the re-post is due for the dispatcher (approved run, endpoint)');
-- Reinjected once only: the second reinject is false and adds nothing.
SELECT ok(NOT idemgate.reinject((SELECT id FROM dl), 'ops'), 'a second reinject: false');
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'idemgate.rerun:rr-wf'), 1::bigint, 'still one re-post');
-- The re-posted input, claimed by the workflow with the same key, recovers the run.
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim('rr-inv-1', '{"invoice": 4471, "customer": "ACME", "lines": [1, 2]}', '1 hour', 'rr-wf')$$,
                  $$VALUES ('recovered', 'processing')$$, 'the re-posted input recovers the run');
-- Only an operator may pull the re-run type (it has an endpoint).
SELECT throws_ok($$SELECT pg_temp.as_role('rr_client', 'SELECT count(*) FROM idemgate.claim_effects(''idemgate.rerun:rr-wf'')')$$,
                 '42501', NULL, 'a client may not pull re-posts');

-- Without a re-run endpoint for the workflow, without a workflow, or
-- without a stored input (claim_lease keeps only the hash): reinject
-- behaves as before, nothing is re-posted.
CREATE TEMP TABLE dl2 AS SELECT pg_temp.dead('rr-other-1', 'rr-other-wf', '{"n": 1}') AS id
  UNION ALL SELECT pg_temp.dead('rr-nowf-1', NULL, '{"n": 2}');
SELECT is(idemgate.reinject_all('ops', NULL, now()), 2, 'reinject_all (this transaction''s letters) reinjects both');
SELECT results_eq($$SELECT idempotency_key, state FROM idemgate.runs WHERE idempotency_key IN ('rr-other-1', 'rr-nowf-1') ORDER BY 1$$,
                  $$VALUES ('rr-nowf-1', 'failed_retryable'), ('rr-other-1', 'failed_retryable')$$, 'both are failed_retryable');
SELECT is_empty($$SELECT 1 FROM idemgate.runs r, dl2 WHERE r.idempotency_key = 'idemgate.rerun:' || dl2.id$$, 'no carrier for either');
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE effect_type LIKE 'idemgate.rerun:%'), 1::bigint, 'no new re-post');
SELECT results_eq($$SELECT details ? 'rerun_key' FROM idemgate.events WHERE kind = 'run_reinjected' AND idempotency_key IN ('rr-other-1', 'rr-nowf-1')$$,
                  $$VALUES (false), (false)$$, 'their events name no re-post');
SELECT results_eq($$SELECT c.version FROM idemgate.claim_lease('rr-lease-1', idemgate.hash_payload('{"n": 3}'), gen_random_uuid(), '1 hour') c$$,
                  $$VALUES (0::bigint)$$, 'a run claimed with claim_lease (no stored input)');
UPDATE idemgate.runs SET workflow = 'rr-wf' WHERE idempotency_key = 'rr-lease-1';
SELECT idemgate.fail('rr-lease-1', lease_owner, version, 'model', 'bad', false) FROM idemgate.runs WHERE idempotency_key = 'rr-lease-1' \g /dev/null
SELECT ok(idemgate.reinject((SELECT id FROM idemgate.dead_letters WHERE idempotency_key = 'rr-lease-1'), 'ops'),
          'its dead letter is reinjected');
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE effect_type LIKE 'idemgate.rerun:%'), 1::bigint,
          'nothing to re-post without a stored input, even with an endpoint');

-- reinject_all re-posts each run of a workflow with an endpoint.
CREATE TEMP TABLE dl3 AS SELECT pg_temp.dead('rr-inv-' || g, 'rr-wf', jsonb_build_object('invoice', g)) AS id FROM generate_series(2, 4) g;
SELECT is(idemgate.reinject_all('ops', NULL, now()), 3, 'reinject_all: three');
SELECT results_eq($$SELECT o.target, o.payload FROM idemgate.outbox o JOIN dl3 ON o.idempotency_key = 'idemgate.rerun:' || dl3.id ORDER BY 1$$,
                  $$VALUES ('rr-inv-2', '{"invoice": 2}'::jsonb), ('rr-inv-3', '{"invoice": 3}'::jsonb), ('rr-inv-4', '{"invoice": 4}'::jsonb)$$,
                  'one re-post each, with its own input');

-- A carrier key already taken by a caller's run: 23505, nothing reinjected.
CREATE TEMP TABLE dl4 AS SELECT pg_temp.dead('rr-inv-9', 'rr-wf', '{"invoice": 9}') AS id;
SELECT idemgate.claim('idemgate.rerun:' || id, '{"squat": true}') FROM dl4 \g /dev/null
SELECT throws_ok(format('SELECT idemgate.reinject(%s, ''ops'')', id), '23505',
                 format('dead letter %s cannot be re-run: key "idemgate.rerun:%s" is taken by another run', id, id),
                 'a taken carrier key: 23505') FROM dl4;
SELECT results_eq($$SELECT d.reinjected_at IS NULL, r.state FROM idemgate.dead_letters d JOIN idemgate.runs r USING (idempotency_key), dl4 WHERE d.id = dl4.id$$,
                  $$VALUES (true, 'failed_terminal')$$, 'nothing was reinjected');

-- Removing the endpoint (unregister_endpoint with the re-run type) stops re-posts.
SELECT ok(idemgate.unregister_endpoint('idemgate.rerun:rr-wf', 'ops'), 'unregister_endpoint removes it');
CREATE TEMP TABLE dl5 AS SELECT pg_temp.dead('rr-inv-10', 'rr-wf', '{"invoice": 10}') AS id;
SELECT ok(idemgate.reinject((SELECT id FROM dl5), 'ops'), 'reinjected');
SELECT is_empty($$SELECT 1 FROM idemgate.outbox o, dl5 WHERE o.idempotency_key = 'idemgate.rerun:' || dl5.id$$, 'and not re-posted');

SELECT * FROM finish();
ROLLBACK;
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
