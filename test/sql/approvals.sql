-- approvals: request_approval, hash_token, peek_approval, consume_approval
-- and expire_approvals. Every way a consumption can fail gives the same
-- "invalid" row and changes nothing; the raw token is stored nowhere.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

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

-- Approve: the token is 43 base64url characters, only its SHA-256 is stored.
SELECT pg_temp.ask('ok');
SELECT length(token), token ~ '^[A-Za-z0-9_-]{43}$' AS base64url, version = claimed_version + 1 AS version_bumped
FROM t WHERE name = 'ok';
SELECT pg_temp.run_state('ok');
SELECT a.token_hash = idemgate.hash_token(t.token) AS hash_token,
       a.token_hash = sha256(convert_to(t.token, 'UTF8')) AS is_sha256,
       a.allowed_decisions, a.audience, a.requested_by, a.consumed_at IS NULL AS unconsumed,
       a.expires_at - a.created_at AS expires_in
FROM idemgate.approvals a JOIN t ON t.approval_id = a.approval_id WHERE t.name = 'ok';
-- The request is audited with the card's identity fields, never its model output.
SELECT kind, actor, details - 'approval_id' - 'expires_at' - 'info' AS details, details ? 'expires_at' AS has_expiry,
       coalesce(details->>'approval_id', details->'info'->>'approval_id') = (SELECT approval_id::text FROM t WHERE name = 'ok') AS names_approval
FROM idemgate.events WHERE idempotency_key = 'approvals-ok' AND kind IN ('approval_requested', 'state_changed')
ORDER BY id;

-- Peek (the GET page): card with the true key and expiry (whatever the caller
-- put there), effects, status; changes nothing.
CREATE TEMP TABLE before_peek AS
  SELECT (SELECT count(*) FROM idemgate.events) AS events, a.* FROM idemgate.approvals a;
SELECT p.approval_id = t.approval_id AS same_approval, p.idempotency_key, p.status, p.allowed_decisions,
       p.card - 'expires_at' AS card, (p.card->>'expires_at')::timestamptz = p.expires_at AS card_expiry,
       p.effects
FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'ok';
SELECT (SELECT count(*) FROM idemgate.events) = (SELECT DISTINCT events FROM before_peek) AS no_new_event,
       (SELECT count(*) FROM (SELECT * FROM idemgate.approvals EXCEPT
                              SELECT approval_id, idempotency_key, token_hash, allowed_decisions, audience,
                                     requested_by, expires_at, consumed_at, decision, approver_subject,
                                     card, effects, created_at, run_version FROM before_peek) d) AS changed_rows;

-- Consume: approved, the run is approved, the effect is in the outbox.
SELECT * FROM pg_temp.consume('ok', 'approve', 'alice');
SELECT pg_temp.run_state('ok');
SELECT effect_type, target, payload, state FROM idemgate.outbox WHERE idempotency_key = 'approvals-ok';
SELECT decision, approver_subject, consumed_at IS NOT NULL AS consumed
FROM idemgate.approvals a JOIN t USING (approval_id) WHERE t.name = 'ok';
SELECT kind, actor, details - 'approval_id' - 'wait_seconds' - 'effect_ids' - 'info' AS details,
       jsonb_typeof(details->'wait_seconds') AS wait_type, (details->>'wait_seconds')::numeric >= 0 AS wait_ok
FROM idemgate.events WHERE idempotency_key = 'approvals-ok'
  AND kind IN ('approval_decided', 'effects_enqueued', 'state_changed') AND actor = 'alice'
ORDER BY id;
SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'ok';

-- A used token: invalid, nothing added.
SELECT * FROM pg_temp.consume('ok', 'approve', 'alice');
SELECT * FROM pg_temp.consume('ok', 'reject', 'bob');
SELECT pg_temp.run_state('ok'), (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-ok') AS effects;

-- Reject: a decision, not a failure. failed_terminal with the rejection in
-- result, nothing enqueued, no dead letter.
SELECT pg_temp.ask('rej', '[{"type": "email", "target": "a", "payload": 1}, {"type": "crm", "target": "b", "payload": 2}]');
SELECT * FROM pg_temp.consume('rej', 'reject', 'carol', 'amount looks wrong');
SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'approvals-rej';
SELECT (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-rej') AS effects,
       (SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-rej') AS dead_letters;
SELECT actor, details->>'decision' AS decision, details->>'reason' AS reason
FROM idemgate.events WHERE idempotency_key = 'approvals-rej' AND kind = 'approval_decided';
SELECT * FROM pg_temp.consume('rej', 'approve', 'carol');

-- Wrong decision: invalid, the token is not burned.
SELECT pg_temp.ask('dec');
SELECT * FROM pg_temp.consume('dec', 'maybe', 'alice');
SELECT * FROM pg_temp.consume('dec', 'APPROVE', 'alice');
SELECT * FROM pg_temp.consume('dec', '', 'alice');
SELECT pg_temp.run_state('dec'), p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'dec';
SELECT * FROM pg_temp.consume('dec', 'approve', 'alice');

-- Audience: an approver outside it gets invalid; one inside decides.
SELECT pg_temp.ask('aud', p_audience => '{alice,bob}');
SELECT * FROM pg_temp.consume('aud', 'approve', 'mallory');
SELECT * FROM pg_temp.consume('aud', 'approve', 'carol');
SELECT pg_temp.run_state('aud');
SELECT * FROM pg_temp.consume('aud', 'approve', 'bob');

-- Separation of duties: the requester cannot approve (or reject) its own request.
SELECT pg_temp.ask('self', p_audience => '{bot,alice}', p_requested_by => 'bot');
SELECT * FROM pg_temp.consume('self', 'approve', 'bot');
SELECT * FROM pg_temp.consume('self', 'reject', 'bot');
SELECT pg_temp.run_state('self');
SELECT * FROM pg_temp.consume('self', 'approve', 'alice');
SELECT pg_temp.ask('self2');
SELECT * FROM pg_temp.consume('self2', 'approve', 'bot');
SELECT * FROM pg_temp.consume('self2', 'approve', 'dana');

-- Garbage tokens: invalid (never an error), peek gives no row.
SELECT g AS token_kind, c.outcome, c.idempotency_key, c.effect_ids,
       (SELECT count(*) FROM idemgate.peek_approval(tok)) AS peek_rows
FROM (VALUES ('empty', ''), ('short', 'x'), ('43 A', repeat('A', 43)),
             ('other token', 'Zm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm9vYmFyZm8'),
             ('used token with a space', (SELECT token FROM t WHERE name = 'ok') || ' '),
             ('uppercased', (SELECT upper(token) FROM t WHERE name = 'dec')),
             ('huge', repeat('x', 100000)), ('unicode', 'ñandú ✓'),
             ('hash of a token', (SELECT encode(idemgate.hash_token(token), 'hex') FROM t WHERE name = 'aud'))) AS v(g, tok),
     idemgate.consume_approval(tok, 'approve', 'alice') c;

-- Expired: invalid while pending; expire_approvals fails the run with a
-- dead letter holding the full payload, and an approval_expired event.
-- (The dispatcher also calls expire_approvals every second; it skips rows
-- another transaction holds, so holding the approval row keeps it away.)
SELECT pg_temp.ask('exp');
BEGIN;
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second'
WHERE approval_id = (SELECT approval_id FROM t WHERE name = 'exp');
SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'exp';
SELECT * FROM pg_temp.consume('exp', 'approve', 'alice');
SELECT pg_temp.run_state('exp');
SELECT idemgate.expire_approvals() >= 1 AS expired_some;
COMMIT;
-- Expiring again changes nothing for this run.
SELECT idemgate.expire_approvals() >= 0 AS expired_again;
SELECT state, result - 'approval_id' - 'expires_at' AS result FROM idemgate.runs WHERE idempotency_key = 'approvals-exp';
SELECT kind, payload, error_class, attempts FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-exp';
SELECT kind, details->>'approval_id' = (SELECT approval_id::text FROM t WHERE name = 'exp') AS names_approval
FROM idemgate.events WHERE idempotency_key = 'approvals-exp' AND kind IN ('approval_expired', 'dead_lettered') ORDER BY id;
SELECT * FROM pg_temp.consume('exp', 'approve', 'alice');
SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'exp';

-- The run stopped waiting (its owner failed it): the approval is no longer
-- actionable (peek says expired, consume invalid) and expiry leaves it alone.
SELECT pg_temp.ask('gone');
SELECT idemgate.fail(key, owner, version, 'upstream', 'ticket closed', false) FROM t WHERE name = 'gone';
SELECT p.status FROM t, idemgate.peek_approval(t.token) p WHERE t.name = 'gone';
SELECT * FROM pg_temp.consume('gone', 'approve', 'alice');
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second'
WHERE approval_id = (SELECT approval_id FROM t WHERE name = 'gone');
SELECT idemgate.expire_approvals() >= 0 AS expired;
SELECT pg_temp.run_state('gone'), (SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key = 'approvals-gone') AS dead_letters;

-- A token from an earlier episode of the same run never decides a later one.
SELECT pg_temp.ask('episode');
SELECT idemgate.fail(key, owner, version, 'upstream', 'retry later', false) FROM t WHERE name = 'episode';
UPDATE idemgate.runs SET state = 'failed_retryable' WHERE idempotency_key = 'approvals-episode';
CREATE TEMP TABLE episode2 AS
  SELECT r.*, a.token, a.version AS new_version
  FROM idemgate.claim('approvals-episode', '{"ticket": "episode"}') r,
       idemgate.request_approval(r.idempotency_key, r.lease_owner, r.version,
                                 '{"type": "email", "target": "x", "payload": 2}') a;
SELECT outcome FROM episode2;
SELECT * FROM pg_temp.consume('episode', 'approve', 'alice');
SELECT c.outcome, cardinality(c.effect_ids) FROM episode2 e, idemgate.consume_approval(e.token, 'approve', 'alice') c;

-- A stranger (wrong owner) or a stale version: a row of NULLs, nothing changed.
SELECT outcome FROM idemgate.claim('approvals-stranger', '{"ticket": "stranger"}');
SELECT * FROM idemgate.request_approval('approvals-stranger', gen_random_uuid(), 0,
                                        '{"type": "email", "target": "x", "payload": {}}');
SELECT a.* FROM idemgate.runs r, idemgate.request_approval(r.idempotency_key, r.lease_owner, r.version + 1,
                                        '{"type": "email", "target": "x", "payload": {}}') a
WHERE r.idempotency_key = 'approvals-stranger';
SELECT * FROM idemgate.request_approval('approvals-no-such-key', gen_random_uuid(), 0,
                                        '{"type": "email", "target": "x", "payload": {}}');
SELECT pg_temp.run_state('stranger'),
       (SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'approvals-stranger') AS approvals,
       (SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'approvals-stranger'
          AND kind IN ('state_changed', 'approval_requested', 'effects_enqueued')) AS events;

-- A second request while awaiting_human: IG002.
SELECT pg_temp.ask('twice');
SELECT pg_temp.sqlstate_of(format(
  'SELECT * FROM idemgate.request_approval(%L, %L, %s, ''{"type": "e", "target": "t", "payload": 1}'')',
  key, owner, version)) FROM t WHERE name = 'twice';
SELECT pg_temp.sqlstate_of(format(
  'SELECT * FROM idemgate.enqueue_effect(%L, %L, %s, ''{"type": "e", "target": "t", "payload": 1}'')',
  key, owner, version)) FROM t WHERE name = 'twice';

-- Argument checks: 22004 / 22023 naming the argument; nothing changes.
SELECT outcome FROM idemgate.claim('approvals-args', '{"ticket": "args"}');
CREATE FUNCTION pg_temp.req(p_args text) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.sqlstate_of(format(
    'SELECT * FROM idemgate.request_approval(%L, %L, %s, %s)', r.idempotency_key, r.lease_owner, r.version, p_args))
  FROM idemgate.runs r WHERE r.idempotency_key = 'approvals-args' $$;
SELECT a AS args, pg_temp.req(a) AS result FROM unnest(ARRAY[
  'NULL',
  '''[]''',
  '''{"type": "e", "target": "t"}''',
  '''{"type": "e", "target": "t", "payload": 1}'', NULL',
  '''{"type": "e", "target": "t", "payload": 1}'', ''0 seconds''',
  '''{"type": "e", "target": "t", "payload": 1}'', ''-1 hour''',
  '''{"type": "e", "target": "t", "payload": 1}'', ''30 days 1 second''',
  '''{"type": "e", "target": "t", "payload": 1}'', ''2 months''',
  '''{"type": "e", "target": "t", "payload": 1}'', card => ''[1]''',
  '''{"type": "e", "target": "t", "payload": 1}'', card => ''"text"''',
  '''{"type": "e", "target": "t", "payload": 1}'', audience => ''{}''',
  '''{"type": "e", "target": "t", "payload": 1}'', audience => ''{alice,NULL}''',
  '''{"type": "e", "target": "t", "payload": 1}'', audience => ''{alice,""}''',
  '''{"type": "e", "target": "t", "payload": 1}'', audience => ''{bot}'', requested_by => ''bot''',
  '''{"type": "e", "target": "t", "payload": 1}'', requested_by => '''''
]) AS a;
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.request_approval(NULL, gen_random_uuid(), 0, ''{}'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.request_approval(''k'', NULL, 0, ''{}'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.request_approval(''k'', gen_random_uuid(), NULL, ''{}'')');
SELECT pg_temp.run_state('args'), (SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'approvals-args') AS approvals;
-- The longest allowed wait is 30 days.
SELECT pg_temp.req('''{"type": "e", "target": "t", "payload": 1}'', ''30 days''');
SELECT expires_at - created_at AS expires_in FROM idemgate.approvals WHERE idempotency_key = 'approvals-args';

SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.consume_approval(NULL, ''approve'', ''alice'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.consume_approval(''x'', NULL, ''alice'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.consume_approval(''x'', ''approve'', NULL)');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.consume_approval(''x'', ''approve'', '''')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.peek_approval(NULL)');
SELECT pg_temp.sqlstate_of('SELECT idemgate.hash_token(NULL)');
SELECT idemgate.hash_token('abc') = sha256('abc'::bytea) AS hash_token_is_sha256;

-- The raw token appears in no table and no event (the whole row is searched).
SELECT count(*) AS tokens FROM (SELECT token FROM t UNION ALL SELECT token FROM episode2) k;
SELECT (SELECT count(*) FROM idemgate.runs x, t WHERE strpos(x::text, t.token) > 0) AS runs,
       (SELECT count(*) FROM idemgate.events x, t WHERE strpos(x::text, t.token) > 0) AS events,
       (SELECT count(*) FROM idemgate.approvals x, t WHERE strpos(x::text, t.token) > 0) AS approvals,
       (SELECT count(*) FROM idemgate.outbox x, t WHERE strpos(x::text, t.token) > 0) AS outbox,
       (SELECT count(*) FROM idemgate.dead_letters x, t WHERE strpos(x::text, t.token) > 0) AS dead_letters,
       (SELECT count(*) FROM idemgate.events x, episode2 e WHERE strpos(x::text, e.token) > 0) AS events2,
       (SELECT count(*) FROM idemgate.approvals x, episode2 e WHERE strpos(x::text, e.token) > 0) AS approvals2;
-- ... nor does the model output of the card reach any event.
SELECT count(*) AS events_with_draft FROM idemgate.events WHERE details::text LIKE '%secret draft%';
-- Every stored hash matches its token.
SELECT count(*) FILTER (WHERE a.token_hash = idemgate.hash_token(t.token)) AS matching, count(*) AS total
FROM t JOIN idemgate.approvals a USING (approval_id);

-- The status view shows no token hashes.
SELECT status, decision, approver_subject FROM idemgate.approval_status s JOIN t USING (approval_id)
ORDER BY t.name;
SELECT count(*) AS token_columns FROM information_schema.columns
WHERE table_schema = 'idemgate' AND table_name = 'approval_status' AND column_name LIKE '%token%';

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
SELECT length(:'n8n_token') AS token_length, :n8n_version AS new_version;
SELECT idempotency_key, status, allowed_decisions, card->>'title' AS title, effects->0->>'target' AS target
FROM idemgate.peek_approval(:'n8n_token');
SELECT outcome, idempotency_key, effect_ids FROM idemgate.consume_approval(:'n8n_token', 'approve', 'bob@example.com');
SELECT outcome, idempotency_key, cardinality(effect_ids) AS effects
FROM idemgate.consume_approval(:'n8n_token', 'approve', 'maria@example.com', 'looks right');
SELECT pg_temp.run_state('n8n'), (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'approvals-n8n') AS effects;
