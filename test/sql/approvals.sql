-- approvals: request_approval, hash_token, peek_approval, consume_approval
-- and expire_approvals. Every way a consumption can fail gives the same
-- "invalid" row and changes nothing; the raw token is stored nowhere. pgTAP.
\i test/sql/include/pgtap.psql

-- ask(name, ...) claims key approvals-<name>, requests an approval as its
-- owner and keeps owner, versions, approval id and token in table t.
CREATE TEMP TABLE t (name text PRIMARY KEY, key text, owner uuid, claimed_version bigint,
                     version bigint, approval_id uuid, token text);
CREATE FUNCTION pg_temp.ask(p_name text,
    p_effects jsonb DEFAULT '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Refund"}}',
    p_audience text[] DEFAULT NULL, p_requested_by text DEFAULT 'bot') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE c record; a record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('approvals-' || p_name, jsonb_build_object('ticket', p_name));
  SELECT * INTO a FROM idemgate.request_approval(c.idempotency_key, c.lease_owner, c.version, p_effects,
      '1 hour', '{"title": "Refund 42 EUR", "model": "m-1", "source_url": "https://crm.example/t/42",
                  "model_output": {"draft": "secret draft"}, "validation_errors": [],
                  "idempotency_key": "forged", "expires_at": "2099-01-01T00:00:00+00:00"}',
      p_audience, p_requested_by);
  INSERT INTO t VALUES (p_name, c.idempotency_key, c.lease_owner, c.version, a.version, a.approval_id, a.token);
END $$;
CREATE FUNCTION pg_temp.consume(p_name text, p_decision text, p_approver text, p_reason text DEFAULT NULL)
RETURNS TABLE(outcome text, key_ok boolean, effect_count integer) LANGUAGE sql AS $$
  SELECT c.outcome, c.idempotency_key = t.key, cardinality(c.effect_ids)
  FROM t, idemgate.consume_approval(t.token, p_decision, p_approver, p_reason) c
  WHERE t.name = p_name $$;
CREATE FUNCTION pg_temp.run_state(p_name text) RETURNS text LANGUAGE sql AS $$
  SELECT r.state || ' v' || r.version FROM idemgate.runs r WHERE r.idempotency_key = 'approvals-' || p_name $$;

SELECT * FROM no_plan();
-- The row consume gives for every refusal.
CREATE TEMP VIEW invalid AS SELECT 'invalid'::text AS outcome, NULL::boolean AS key_ok, NULL::integer AS effect_count;

-- Approve: the token is 43 base64url characters, only its SHA-256 is stored.
SELECT pg_temp.ask('ok') \g /dev/null
SELECT results_eq($$SELECT length(token), token ~ '^[A-Za-z0-9_-]{43}$', version = claimed_version + 1 FROM t WHERE name = 'ok'$$,
                  $$VALUES (43, true, true)$$, 'the token: 43 base64url characters; the version is bumped');
SELECT is(pg_temp.run_state('ok'), 'awaiting_human v1', 'ok awaits a human');
SELECT results_eq($$SELECT a.token_hash = idemgate.hash_token(t.token), a.token_hash = sha256(convert_to(t.token, 'UTF8')),
                           a.allowed_decisions, a.audience, a.requested_by, a.consumed_at IS NULL, a.expires_at - a.created_at
                      FROM idemgate.approvals a JOIN t ON t.approval_id = a.approval_id WHERE t.name = 'ok'$$,
                  $$VALUES (true, true, '{approve,reject}'::text[], NULL::text[], 'bot', true, '1 hour'::interval)$$,
                  'only the SHA-256 of the token is stored, with the request');
-- The request is audited with the card's identity fields, never its model
-- output, in one event with the state change it made.
SELECT results_eq($$SELECT kind, actor, details - 'approval_id' - 'expires_at' - 'info' - 'processing_ms', details ? 'expires_at',
                           coalesce(details->>'approval_id', details->'info'->>'approval_id') = (SELECT approval_id::text FROM t WHERE name = 'ok')
                      FROM idemgate.events WHERE idempotency_key = 'approvals-ok' AND kind IN ('approval_requested', 'state_changed')
                      ORDER BY id$$,
                  $$VALUES ('approval_requested', 'bot', '{"to": "awaiting_human", "from": "processing", "version": 1,
                                                           "model": "m-1", "source_url": "https://crm.example/t/42", "effect_count": 1,
                                                           "requested_by": "bot", "validation_error_count": 0}'::jsonb, true, true)$$,
                  'the request is audited without the model output');

-- Peek (the GET page): card with the true key and expiry (whatever the caller
-- put there), effects, status; changes nothing.
CREATE TEMP TABLE before_peek AS
  SELECT (SELECT count(*) FROM idemgate.events) AS events, a.* FROM idemgate.approvals a;
SELECT results_eq($$SELECT p.approval_id = t.approval_id, p.idempotency_key, p.status, p.allowed_decisions,
                           p.card - 'expires_at', (p.card->>'expires_at')::timestamptz = p.expires_at, p.effects
                      FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'ok'$$,
                  $$VALUES (true, 'approvals-ok', 'pending', '{approve,reject}'::text[],
                            '{"model": "m-1", "title": "Refund 42 EUR", "source_url": "https://crm.example/t/42",
                              "model_output": {"draft": "secret draft"}, "idempotency_key": "approvals-ok", "validation_errors": []}'::jsonb,
                            true, '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Refund"}}'::jsonb)$$,
                  'peek: the true key and expiry in the card, the effects, pending');
SELECT results_eq($$SELECT (SELECT count(*) FROM idemgate.events) = (SELECT DISTINCT events FROM before_peek),
                           (SELECT count(*) FROM (SELECT * FROM idemgate.approvals EXCEPT
                                                  SELECT approval_id, idempotency_key, token_hash, allowed_decisions, audience,
                                                         requested_by, expires_at, consumed_at, decision, approver_subject,
                                                         card, effects, created_at, run_version FROM before_peek) d)$$,
                  $$VALUES (true, 0::bigint)$$, 'peek changed nothing');

-- Consume: approved, the run is approved, the effect is in the outbox.
SELECT results_eq($$SELECT * FROM pg_temp.consume('ok', 'approve', 'alice')$$, $$VALUES ('approved', true, 1)$$, 'alice approves');
SELECT is(pg_temp.run_state('ok'), 'approved v2', 'ok approved');
SELECT results_eq($$SELECT effect_type, target, payload, state FROM idemgate.outbox WHERE idempotency_key = 'approvals-ok'$$,
                  $$VALUES ('email', 'ana@example.com', '{"subject": "Refund"}'::jsonb, 'pending')$$, 'the effect is in the outbox');
SELECT results_eq($$SELECT decision, approver_subject, consumed_at IS NOT NULL
                      FROM idemgate.approvals a JOIN t USING (approval_id) WHERE t.name = 'ok'$$,
                  $$VALUES ('approve', 'alice', true)$$, 'the approval is consumed by alice');
SELECT results_eq($$SELECT kind, actor, details - 'approval_id' - 'wait_seconds' - 'effect_ids' - 'info',
                           jsonb_typeof(details->'wait_seconds'), (details->>'wait_seconds')::numeric >= 0
                      FROM idemgate.events WHERE idempotency_key = 'approvals-ok'
                        AND kind IN ('approval_decided', 'effects_enqueued', 'state_changed') AND actor = 'alice'
                      ORDER BY id$$,
                  $$VALUES ('effects_enqueued', 'alice', '{"count": 1, "inserted": 1, "automatic": false}'::jsonb, NULL::text, NULL::boolean),
                           ('approval_decided', 'alice', '{"decision": "approve", "to": "approved", "from": "awaiting_human",
                                                           "version": 2}'::jsonb, 'number', true)$$,
                  'the decision is audited with the wait');
SELECT is((SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'ok'), 'consumed', 'peek says consumed');

-- A used token: invalid, nothing added.
SELECT results_eq($$SELECT * FROM pg_temp.consume('ok', 'approve', 'alice')$$, 'SELECT * FROM invalid', 'a used token: invalid');
SELECT results_eq($$SELECT * FROM pg_temp.consume('ok', 'reject', 'bob')$$, 'SELECT * FROM invalid', 'a used token, rejecting: invalid');
SELECT results_eq($$SELECT pg_temp.run_state('ok'), (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-ok')$$,
                  $$VALUES ('approved v2', 1::bigint)$$, 'nothing added');

-- Reject: a decision, not a failure. failed_terminal with the rejection in
-- result, nothing enqueued, no dead letter.
SELECT pg_temp.ask('rej', '[{"type": "email", "target": "a", "payload": 1}, {"type": "crm", "target": "b", "payload": 2}]') \g /dev/null
SELECT results_eq($$SELECT * FROM pg_temp.consume('rej', 'reject', 'carol', 'amount looks wrong')$$, $$VALUES ('rejected', true, 0)$$,
                  'carol rejects');
SELECT results_eq($$SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'approvals-rej'$$,
                  $$VALUES ('failed_terminal', '{"reason": "amount looks wrong", "approver": "carol", "decision": "reject"}'::jsonb)$$,
                  'failed_terminal with the rejection in result');
SELECT results_eq($$SELECT (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-rej'),
                           (SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-rej')$$,
                  $$VALUES (0::bigint, 0::bigint)$$, 'nothing enqueued, no dead letter');
SELECT results_eq($$SELECT actor, details->>'decision', details->>'reason'
                      FROM idemgate.events WHERE idempotency_key = 'approvals-rej' AND kind = 'approval_decided'$$,
                  $$VALUES ('carol', 'reject', 'amount looks wrong')$$, 'the rejection is audited with its reason');
SELECT results_eq($$SELECT * FROM pg_temp.consume('rej', 'approve', 'carol')$$, 'SELECT * FROM invalid', 'a rejected token: invalid');

-- Wrong decision: invalid, the token is not burned.
SELECT pg_temp.ask('dec') \g /dev/null
SELECT results_eq(format('SELECT * FROM pg_temp.consume(%L, %L, %L)', 'dec', d, 'alice'), 'SELECT * FROM invalid',
                  format('decision %L: invalid', d)) FROM unnest(ARRAY['maybe', 'APPROVE', '']) AS d;
SELECT results_eq($$SELECT pg_temp.run_state('dec'), p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'dec'$$,
                  $$VALUES ('awaiting_human v1', 'pending')$$, 'the token is not burned');
SELECT results_eq($$SELECT * FROM pg_temp.consume('dec', 'approve', 'alice')$$, $$VALUES ('approved', true, 1)$$, 'then approve works');

-- Audience: an approver outside it gets invalid; one inside decides.
SELECT pg_temp.ask('aud', p_audience => '{alice,bob}') \g /dev/null
SELECT results_eq($$SELECT * FROM pg_temp.consume('aud', 'approve', 'mallory')$$, 'SELECT * FROM invalid', 'mallory is outside the audience');
SELECT results_eq($$SELECT * FROM pg_temp.consume('aud', 'approve', 'carol')$$, 'SELECT * FROM invalid', 'carol is outside the audience');
SELECT is(pg_temp.run_state('aud'), 'awaiting_human v1', 'aud still awaits a human');
SELECT results_eq($$SELECT * FROM pg_temp.consume('aud', 'approve', 'bob')$$, $$VALUES ('approved', true, 1)$$, 'bob decides');

-- Separation of duties: the requester cannot approve (or reject) its own request.
SELECT pg_temp.ask('self', p_audience => '{bot,alice}', p_requested_by => 'bot') \g /dev/null
SELECT results_eq($$SELECT * FROM pg_temp.consume('self', 'approve', 'bot')$$, 'SELECT * FROM invalid', 'the requester may not approve');
SELECT results_eq($$SELECT * FROM pg_temp.consume('self', 'reject', 'bot')$$, 'SELECT * FROM invalid', 'nor reject');
SELECT is(pg_temp.run_state('self'), 'awaiting_human v1', 'self still awaits a human');
SELECT results_eq($$SELECT * FROM pg_temp.consume('self', 'approve', 'alice')$$, $$VALUES ('approved', true, 1)$$, 'alice decides');
SELECT pg_temp.ask('self2') \g /dev/null
SELECT results_eq($$SELECT * FROM pg_temp.consume('self2', 'approve', 'bot')$$, 'SELECT * FROM invalid', 'without an audience too');
SELECT results_eq($$SELECT * FROM pg_temp.consume('self2', 'approve', 'dana')$$, $$VALUES ('approved', true, 1)$$, 'dana decides');

-- Garbage tokens: invalid (never an error), peek gives no row.
SELECT results_eq(
  $$SELECT g, c.outcome, c.idempotency_key, c.effect_ids, (SELECT count(*) FROM idemgate.peek_approval(tok))
      FROM (VALUES (1, 'empty', ''), (2, 'short', 'x'), (3, '43 A', repeat('A', 43)),
                   (4, 'other token', 'Zm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm8'),
                   (5, 'used token with a space', (SELECT token FROM t WHERE name = 'ok') || ' '),
                   (6, 'uppercased', (SELECT upper(token) FROM t WHERE name = 'dec')),
                   (7, 'huge', repeat('x', 100000)), (8, 'unicode', 'ñandú ✓'),
                   (9, 'hash of a token', (SELECT encode(idemgate.hash_token(token), 'hex') FROM t WHERE name = 'aud'))) AS v(n, g, tok),
           idemgate.consume_approval(tok, 'approve', 'alice') c
     ORDER BY n$$,
  $$SELECT g, 'invalid'::text, NULL::text, NULL::uuid[], 0::bigint
      FROM unnest(ARRAY['empty', 'short', '43 A', 'other token', 'used token with a space', 'uppercased', 'huge', 'unicode',
                        'hash of a token']) AS g$$,
  'garbage tokens: invalid, and peek finds nothing');

-- Expired: invalid while pending; expire_approvals fails the run with a
-- dead letter holding the full payload, and an approval_expired event.
-- (The dispatcher also calls expire_approvals every second; it skips rows
-- another transaction holds, so holding the approval row keeps it away.)
SELECT pg_temp.ask('exp') \g /dev/null
BEGIN;
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second'
WHERE approval_id = (SELECT approval_id FROM t WHERE name = 'exp');
SELECT is((SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'exp'), 'expired', 'peek says expired');
SELECT results_eq($$SELECT * FROM pg_temp.consume('exp', 'approve', 'alice')$$, 'SELECT * FROM invalid', 'an expired token: invalid');
SELECT is(pg_temp.run_state('exp'), 'awaiting_human v1', 'exp still awaits a human');
SELECT ok(idemgate.expire_approvals() >= 1, 'expire_approvals expires it');
COMMIT;
-- Expiring again changes nothing for this run.
SELECT ok(idemgate.expire_approvals() >= 0, 'expire_approvals again');
SELECT results_eq($$SELECT state, result - 'approval_id' - 'expires_at' FROM idemgate.runs WHERE idempotency_key = 'approvals-exp'$$,
                  $$VALUES ('failed_terminal', '{"error_class": "approval_expired"}'::jsonb)$$, 'the run failed: approval_expired');
SELECT results_eq($$SELECT kind, payload, error_class, attempts FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-exp'$$,
                  $$VALUES ('run', '{"ticket": "exp"}'::jsonb, 'approval_expired', 1)$$, 'a dead letter with the full payload');
SELECT results_eq($$SELECT kind, details->>'approval_id' = (SELECT approval_id::text FROM t WHERE name = 'exp')
                      FROM idemgate.events WHERE idempotency_key = 'approvals-exp' AND kind IN ('approval_expired', 'dead_lettered') ORDER BY id$$,
                  $$VALUES ('dead_lettered', NULL::boolean), ('approval_expired', true)$$, 'dead_lettered and approval_expired events');
SELECT results_eq($$SELECT * FROM pg_temp.consume('exp', 'approve', 'alice')$$, 'SELECT * FROM invalid', 'still invalid');
SELECT is((SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'exp'), 'expired', 'still expired');

-- The run stopped waiting (its owner failed it): the approval is no longer
-- actionable (peek says expired, consume invalid) and expiry leaves it alone.
SELECT pg_temp.ask('gone') \g /dev/null
SELECT is((SELECT idemgate.fail(key, owner, version, 'upstream', 'ticket closed', false) FROM t WHERE name = 'gone'),
          'failed_terminal', 'the owner fails gone');
SELECT is((SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'gone'), 'expired', 'peek says expired');
SELECT results_eq($$SELECT * FROM pg_temp.consume('gone', 'approve', 'alice')$$, 'SELECT * FROM invalid', 'consume: invalid');
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second'
WHERE approval_id = (SELECT approval_id FROM t WHERE name = 'gone');
SELECT ok(idemgate.expire_approvals() >= 0, 'expire_approvals');
SELECT results_eq($$SELECT pg_temp.run_state('gone'), (SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-gone')$$,
                  $$VALUES ('failed_terminal v2', 1::bigint)$$, 'expiry left it alone');

-- A token from an earlier episode of the same run never decides a later one.
SELECT pg_temp.ask('episode') \g /dev/null
SELECT is((SELECT idemgate.fail(key, owner, version, 'upstream', 'retry later', false) FROM t WHERE name = 'episode'),
          'failed_terminal', 'the owner fails episode');
UPDATE idemgate.runs SET state = 'failed_retryable' WHERE idempotency_key = 'approvals-episode';
CREATE TEMP TABLE episode2 AS
  SELECT r.*, a.token, a.version AS new_version
  FROM idemgate.claim('approvals-episode', '{"ticket": "episode"}') r,
       idemgate.request_approval(r.idempotency_key, r.lease_owner, r.version,
                                 '{"type": "email", "target": "x", "payload": 2}') a;
SELECT is((SELECT outcome FROM episode2), 'recovered', 'a new episode');
SELECT results_eq($$SELECT * FROM pg_temp.consume('episode', 'approve', 'alice')$$, 'SELECT * FROM invalid', 'the old token: invalid');
SELECT results_eq($$SELECT c.outcome, cardinality(c.effect_ids) FROM episode2 e, idemgate.consume_approval(e.token, 'approve', 'alice') c$$,
                  $$VALUES ('approved', 1)$$, 'the new token decides');

-- A stranger (wrong owner) or a stale version: a row of NULLs, nothing changed.
SELECT is((SELECT outcome FROM idemgate.claim('approvals-stranger', '{"ticket": "stranger"}')), 'claimed', 'stranger claimed');
SELECT results_eq(q, $$VALUES (NULL::uuid, NULL::text, NULL::timestamptz, NULL::bigint)$$, what) FROM (VALUES
  ('a wrong owner: a row of NULLs', $$SELECT * FROM idemgate.request_approval('approvals-stranger', gen_random_uuid(), 0,
                                                                          '{"type": "email", "target": "x", "payload": {}}')$$),
  ('a stale version: a row of NULLs', $$SELECT a.* FROM idemgate.runs r,
                                              idemgate.request_approval(r.idempotency_key, r.lease_owner, r.version + 1,
                                                                        '{"type": "email", "target": "x", "payload": {}}') a
                                         WHERE r.idempotency_key = 'approvals-stranger'$$),
  ('an unknown key: a row of NULLs', $$SELECT * FROM idemgate.request_approval('approvals-no-such-key', gen_random_uuid(), 0,
                                                                           '{"type": "email", "target": "x", "payload": {}}')$$)
) AS m(what, q);
SELECT results_eq($$SELECT pg_temp.run_state('stranger'),
                           (SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'approvals-stranger'),
                           (SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'approvals-stranger'
                              AND kind IN ('state_changed', 'approval_requested', 'effects_enqueued'))$$,
                  $$VALUES ('processing v0', 0::bigint, 0::bigint)$$, 'nothing changed');

-- A second request while awaiting_human: IG002.
SELECT pg_temp.ask('twice') \g /dev/null
SELECT throws_ok(format('SELECT * FROM idemgate.request_approval(%L, %L, %s, ''{"type": "e", "target": "t", "payload": 1}'')',
                        key, owner, version),
                 'IG002', 'illegal transition of run "approvals-twice" from awaiting_human to awaiting_human', 'a second request: IG002')
FROM t WHERE name = 'twice';
SELECT throws_ok(format('SELECT * FROM idemgate.enqueue_effect(%L, %L, %s, ''{"type": "e", "target": "t", "payload": 1}'')',
                        key, owner, version),
                 'IG002', 'illegal transition of run "approvals-twice" from awaiting_human to approved', 'enqueue while awaiting: IG002')
FROM t WHERE name = 'twice';

-- Argument checks: 22004 / 22023 naming the argument; nothing changes.
SELECT is((SELECT outcome FROM idemgate.claim('approvals-args', '{"ticket": "args"}')), 'claimed', 'args claimed');
-- req(args): the request_approval call for approvals-args with these trailing arguments.
CREATE FUNCTION pg_temp.req(p_args text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT * FROM idemgate.request_approval(%L, %L, %s, %s)', r.idempotency_key, r.lease_owner, r.version, p_args)
  FROM idemgate.runs r WHERE r.idempotency_key = 'approvals-args' $$;
SELECT throws_ok(pg_temp.req(a), code, m, a) FROM (VALUES
  ('NULL', '22004', 'argument "effects" must not be NULL'),
  ('''[]''', '22023', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('''{"type": "e", "target": "t"}''', '22023', 'effects.payload is missing'),
  ('''{"type": "e", "target": "t", "payload": 1}'', NULL', '22004', 'argument "expires_in" must not be NULL'),
  ('''{"type": "e", "target": "t", "payload": 1}'', ''0 seconds''', '22023', 'argument "expires_in" must be greater than 0 s and at most 2592000 s'),
  ('''{"type": "e", "target": "t", "payload": 1}'', ''-1 hour''', '22023', 'argument "expires_in" must be greater than 0 s and at most 2592000 s'),
  ('''{"type": "e", "target": "t", "payload": 1}'', ''30 days 1 second''', '22023', 'argument "expires_in" must be greater than 0 s and at most 2592000 s'),
  ('''{"type": "e", "target": "t", "payload": 1}'', ''2 months''', '22023', 'argument "expires_in" must be greater than 0 s and at most 2592000 s'),
  ('''{"type": "e", "target": "t", "payload": 1}'', card => ''[1]''', '22023', 'argument "card" must be a JSON object'),
  ('''{"type": "e", "target": "t", "payload": 1}'', card => ''"text"''', '22023', 'argument "card" must be a JSON object'),
  ('''{"type": "e", "target": "t", "payload": 1}'', audience => ''{}''', '22023', 'argument "audience" must not be empty'),
  ('''{"type": "e", "target": "t", "payload": 1}'', audience => ''{alice,NULL}''', '22023',
   'argument "audience" must hold subjects of 1 to 200 bytes; element 2 does not'),
  ('''{"type": "e", "target": "t", "payload": 1}'', audience => ''{alice,""}''', '22023',
   'argument "audience" must hold subjects of 1 to 200 bytes; element 2 does not'),
  ('''{"type": "e", "target": "t", "payload": 1}'', audience => ''{bot}'', requested_by => ''bot''', '22023',
   'argument "audience" names only the requester "bot"'),
  ('''{"type": "e", "target": "t", "payload": 1}'', requested_by => ''''', '22023',
   'argument "requested_by" must be between 1 and 200 bytes long, not 0')
) AS m(a, code, m);
SELECT throws_ok(q, '22004', m, q) FROM (VALUES
  ('SELECT * FROM idemgate.request_approval(NULL, gen_random_uuid(), 0, ''{}'')', 'argument "key" must not be NULL'),
  ('SELECT * FROM idemgate.request_approval(''k'', NULL, 0, ''{}'')', 'argument "owner" must not be NULL'),
  ('SELECT * FROM idemgate.request_approval(''k'', gen_random_uuid(), NULL, ''{}'')', 'argument "version" must not be NULL')
) AS m(q, m);
SELECT results_eq($$SELECT pg_temp.run_state('args'), (SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'approvals-args')$$,
                  $$VALUES ('processing v0', 0::bigint)$$, 'nothing changed');
-- The longest allowed wait is 30 days.
SELECT lives_ok(pg_temp.req('''{"type": "e", "target": "t", "payload": 1}'', ''30 days'''), '30 days is allowed');
SELECT is((SELECT expires_at - created_at FROM idemgate.approvals WHERE idempotency_key = 'approvals-args'), '30 days'::interval,
          'it expires in 30 days');

SELECT throws_ok(q, code, m, q) FROM (VALUES
  ('SELECT * FROM idemgate.consume_approval(NULL, ''approve'', ''alice'')', '22004', 'argument "token" must not be NULL'),
  ('SELECT * FROM idemgate.consume_approval(''x'', NULL, ''alice'')', '22004', 'argument "decision" must not be NULL'),
  ('SELECT * FROM idemgate.consume_approval(''x'', ''approve'', NULL)', '22004', 'argument "approver" must not be NULL'),
  ('SELECT * FROM idemgate.consume_approval(''x'', ''approve'', '''')', '22023', 'argument "approver" must be between 1 and 200 bytes long, not 0'),
  ('SELECT * FROM idemgate.peek_approval(NULL)', '22004', 'argument "token" must not be NULL'),
  ('SELECT idemgate.hash_token(NULL)', '22004', 'argument "token" must not be NULL')
) AS m(q, code, m);
SELECT is(idemgate.hash_token('abc'), sha256('abc'::bytea), 'hash_token is SHA-256');

-- The raw token appears in no table and no event (the whole row is searched).
SELECT is((SELECT count(*) FROM (SELECT token FROM t UNION ALL SELECT token FROM episode2) k), 11::bigint, 'eleven tokens');
SELECT results_eq($$SELECT (SELECT count(*) FROM idemgate.runs x, t WHERE strpos(x::text, t.token) > 0),
                           (SELECT count(*) FROM idemgate.events x, t WHERE strpos(x::text, t.token) > 0),
                           (SELECT count(*) FROM idemgate.approvals x, t WHERE strpos(x::text, t.token) > 0),
                           (SELECT count(*) FROM idemgate.outbox x, t WHERE strpos(x::text, t.token) > 0),
                           (SELECT count(*) FROM idemgate.dead_letters x, t WHERE strpos(x::text, t.token) > 0),
                           (SELECT count(*) FROM idemgate.events x, episode2 e WHERE strpos(x::text, e.token) > 0),
                           (SELECT count(*) FROM idemgate.approvals x, episode2 e WHERE strpos(x::text, e.token) > 0)$$,
                  $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'no raw token in runs, events, approvals, outbox or dead letters');
-- ... nor does the model output of the card reach any event.
SELECT is_empty($$SELECT id FROM idemgate.events WHERE details::text LIKE '%secret draft%'$$, 'no model output in any event');
-- Every stored hash matches its token.
SELECT results_eq($$SELECT count(*) FILTER (WHERE a.token_hash = idemgate.hash_token(t.token)), count(*)
                      FROM t JOIN idemgate.approvals a USING (approval_id)$$,
                  $$VALUES (10::bigint, 10::bigint)$$, 'every stored hash matches its token');

-- The status view shows no token hashes.
SELECT results_eq($$SELECT status, decision, approver_subject FROM idemgate.approval_status s JOIN t USING (approval_id) ORDER BY t.name$$,
                  $$VALUES ('consumed', 'approve', 'bob'), ('consumed', 'approve', 'alice'), ('expired', NULL, NULL),
                           ('expired', NULL, NULL), ('expired', NULL, NULL), ('consumed', 'approve', 'alice'),
                           ('consumed', 'reject', 'carol'), ('consumed', 'approve', 'alice'), ('consumed', 'approve', 'dana'),
                           ('pending', NULL, NULL)$$,
                  'approval_status: aud, dec, episode, exp, gone, ok, rej, self, self2, twice');
SELECT is_empty($$SELECT column_name FROM information_schema.columns
                   WHERE table_schema = 'idemgate' AND table_name = 'approval_status' AND column_name LIKE '%token%'$$,
                'approval_status has no token column');

-- The n8n calls of the README's Approvals section, as written there (one JSON parameter
-- for the request; the GET page peeks; the POST consumes).
SELECT lease_owner AS n8n_owner, version AS n8n_version FROM idemgate.claim('approvals-n8n', '{"ticket": "n8n"}') \gset
PREPARE n8n_ask(text) AS
SELECT a.approval_id, a.token, a.expires_at, a.version
FROM (SELECT $1::jsonb AS r) p,
     idemgate.request_approval(p.r->>'key', (p.r->>'owner')::uuid, (p.r->>'version')::bigint,
                               p.r->'effects', interval '24 hours', p.r->'card',
                               audience => ARRAY['maria@example.com', 'joan@example.com'],
                               requested_by => 'n8n:refunds') a;
EXECUTE n8n_ask(pg_catalog.jsonb_build_object('key', 'approvals-n8n', 'owner', :'n8n_owner', 'version', :n8n_version,
    'effects', '[{"type": "email", "target": "ana@example.com", "payload": {"body": "Hola, Ana"}}]'::jsonb,
    'card', '{"title": "Refund, 42 EUR", "source_url": "https://helpdesk.example/tickets/4471"}'::jsonb)::text) \gset n8n_
SELECT is(length(:'n8n_token'), 43, 'n8n: a 43-character token');
SELECT is(:n8n_version::bigint, 1::bigint, 'n8n: version 1');
SELECT results_eq(format($$SELECT idempotency_key, status, allowed_decisions, card->>'title', effects->0->>'target'
                             FROM idemgate.peek_approval(%L)$$, :'n8n_token'),
                  $$VALUES ('approvals-n8n', 'pending', '{approve,reject}'::text[], 'Refund, 42 EUR', 'ana@example.com')$$,
                  'n8n: the GET page peeks');
SELECT results_eq(format($$SELECT outcome, idempotency_key, effect_ids FROM idemgate.consume_approval(%L, 'approve', 'bob@example.com')$$,
                         :'n8n_token'),
                  $$VALUES ('invalid', NULL::text, NULL::uuid[])$$, 'n8n: bob is outside the audience');
SELECT results_eq(format($$SELECT outcome, idempotency_key, cardinality(effect_ids)
                             FROM idemgate.consume_approval(%L, 'approve', 'maria@example.com', 'looks right')$$, :'n8n_token'),
                  $$VALUES ('approved', 'approvals-n8n', 1)$$, 'n8n: maria approves');
SELECT results_eq($$SELECT pg_temp.run_state('n8n'), (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-n8n')$$,
                  $$VALUES ('approved v2', 1::bigint)$$, 'n8n: approved, one effect');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
