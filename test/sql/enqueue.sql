-- enqueue_effect: the automatic path. Owner-checked; inserts the effects and
-- approves the run in one step; the same (key, type, target) never twice;
-- malformed effects are refused naming the problem, and change nothing.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

CREATE TEMP TABLE runs_t (name text PRIMARY KEY, key text, owner uuid, version bigint);
CREATE FUNCTION pg_temp.claim_as(p_name text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('enqueue-' || p_name, jsonb_build_object('n', p_name));
  INSERT INTO runs_t VALUES (p_name, c.idempotency_key, c.lease_owner, c.version)
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, version = excluded.version;
END $$;
CREATE FUNCTION pg_temp.enq(name text, effects jsonb) RETURNS TABLE(effect_ids uuid[], version bigint)
LANGUAGE sql AS $$
  SELECT e.* FROM runs_t r, idemgate.enqueue_effect(r.key, r.owner, r.version, effects) e
  WHERE r.name = enq.name $$;

-- One effect object: one outbox row, run approved, version + 1.
SELECT pg_temp.claim_as('one');
CREATE TEMP TABLE got AS
  SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}');
SELECT array_length(effect_ids, 1) AS n, version FROM got;
SELECT o.effect_id = g.effect_ids[1] AS same_id, o.effect_type, o.target, o.payload, o.state, o.attempts
FROM idemgate.outbox o, got g WHERE o.idempotency_key = 'enqueue-one';
SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'enqueue-one';
SELECT kind, actor, details - 'effect_ids' AS details,
       details->'effect_ids' = (SELECT to_jsonb(effect_ids) FROM got) AS ids_logged
FROM idemgate.events WHERE idempotency_key = 'enqueue-one' AND kind IN ('effects_enqueued', 'state_changed')
ORDER BY id;

-- The old (owner, version) no longer owns the run: a row of NULLs, nothing added.
SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "other@example.com", "payload": {}}');
SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-one';
-- The live owner with the new version: the run is approved now, so a new
-- effect is IG002 (a new effect needs a new key), alone or beside an old one.
UPDATE runs_t SET version = 1 WHERE name = 'one';
SELECT pg_temp.sqlstate_of($$SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "x", "payload": {}}')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM pg_temp.enq('one', '[{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}},
                                                             {"type": "email", "target": "x", "payload": {}}]')$$);
-- A replay of exactly what was enqueued (a retried n8n node holding the
-- returned version): the same id and the current version, and nothing
-- changes (no row, no event, no version bump).
SELECT r.effect_ids = g.effect_ids AS same_ids, r.version
FROM pg_temp.enq('one', '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}') r, got g;
SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-one') AS effects,
       (SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'enqueue-one') AS events
FROM idemgate.runs WHERE idempotency_key = 'enqueue-one';
-- The replay is owner-checked like the first call: stale version or stranger → NULLs.
SELECT * FROM idemgate.enqueue_effect('enqueue-one', (SELECT owner FROM runs_t WHERE name = 'one'), 0,
                                       '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}');
SELECT * FROM idemgate.enqueue_effect('enqueue-one', gen_random_uuid(), 1,
                                       '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}');

-- An array: ids come back in input order, one row per effect.
SELECT pg_temp.claim_as('many');
CREATE TEMP TABLE got_many AS
  SELECT * FROM pg_temp.enq('many', '[{"type": "email", "target": "b@example.com", "payload": 1},
                                      {"type": "crm", "target": "lead-7", "payload": null},
                                      {"type": "email", "target": "a@example.com", "payload": [1, 2]}]');
SELECT i, o.effect_type, o.target, o.payload
FROM got_many g, unnest(g.effect_ids) WITH ORDINALITY AS u(id, i)
JOIN idemgate.outbox o ON o.effect_id = u.id ORDER BY i;
SELECT count(DISTINCT u) AS distinct_ids FROM got_many, unnest(effect_ids) u;
-- Replaying a subset in another order returns the existing ids in input order.
UPDATE runs_t SET version = (SELECT version FROM got_many) WHERE name = 'many';
SELECT r.effect_ids = ARRAY[m.effect_ids[3], m.effect_ids[1]] AS ids_in_input_order, r.version = m.version AS same_version
FROM pg_temp.enq('many', '[{"type": "email", "target": "a@example.com", "payload": [1, 2]},
                           {"type": "email", "target": "b@example.com", "payload": 1}]') r, got_many m;
SELECT count(*) AS effects_enqueued_events FROM idemgate.events
WHERE idempotency_key = 'enqueue-many' AND kind = 'effects_enqueued';

-- A stranger (random owner) and a wrong version change nothing.
SELECT pg_temp.claim_as('stranger');
SELECT * FROM idemgate.enqueue_effect('enqueue-stranger', gen_random_uuid(), 0,
                                       '{"type": "email", "target": "t", "payload": {}}');
SELECT e.* FROM runs_t r, idemgate.enqueue_effect(r.key, r.owner, r.version + 7,
                                       '{"type": "email", "target": "t", "payload": {}}') e
WHERE r.name = 'stranger';
SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-stranger') AS effects
FROM idemgate.runs WHERE idempotency_key = 'enqueue-stranger';
SELECT * FROM idemgate.enqueue_effect('enqueue-no-such-key', gen_random_uuid(), 0,
                                       '{"type": "email", "target": "t", "payload": {}}');

-- Re-enqueue after the run came back (as a reinjected run does): the same
-- (key, type, target) returns the existing effect, only the new one is added.
UPDATE idemgate.runs SET state = 'failed_retryable' WHERE idempotency_key = 'enqueue-many';
SELECT pg_temp.claim_as('many');
CREATE TEMP TABLE got_again AS
  SELECT * FROM pg_temp.enq('many', '[{"type": "email", "target": "a@example.com", "payload": "changed"},
                                      {"type": "sms", "target": "+34600000000", "payload": {}}]');
SELECT g.effect_ids[1] = m.effect_ids[3] AS existing_id_returned,
       g.effect_ids[2] <> ALL (m.effect_ids) AS new_id_is_new
FROM got_again g, got_many m;
SELECT effect_type, target, payload FROM idemgate.outbox WHERE idempotency_key = 'enqueue-many'
ORDER BY effect_type, target;
SELECT details->'count' AS count, details->'inserted' AS inserted FROM idemgate.events
WHERE idempotency_key = 'enqueue-many' AND kind = 'effects_enqueued' ORDER BY id;

-- Malformed effects: 22023 naming the problem; the run stays processing.
SELECT pg_temp.claim_as('bad');
SELECT e AS effects, pg_temp.sqlstate_of(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad', e)) AS result
FROM unnest(ARRAY[
  '[]', '5', '"email"', 'null', 'true', '[1]', '[[]]', '{}',
  '{"type": "email", "target": "t"}',
  '{"type": "email", "payload": {}}',
  '{"target": "t", "payload": {}}',
  '{"type": "", "target": "t", "payload": {}}',
  '{"type": "email", "target": "", "payload": {}}',
  '{"type": 7, "target": "t", "payload": {}}',
  '{"type": "email", "target": ["t"], "payload": {}}',
  '{"type": null, "target": "t", "payload": {}}',
  '{"type": "email", "target": "t", "payload": {}, "url": "https://evil.example"}',
  '[{"type": "email", "target": "t", "payload": {}}, {"type": "email", "target": "u", "payload": {}},
    {"type": "email", "target": 3, "payload": {}}]',
  '[{"type": "email", "target": "t", "payload": {}}, "x"]',
  '[{"type": "email", "target": "t", "payload": 1}, {"type": "sms", "target": "t", "payload": 2},
    {"type": "email", "target": "t", "payload": 3}]'
]) AS e;
SELECT pg_temp.sqlstate_of(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad',
  (SELECT jsonb_agg(jsonb_build_object('type', 'e', 'target', 't' || i, 'payload', i))
   FROM generate_series(1, 1001) i)));
SELECT pg_temp.sqlstate_of(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad',
  jsonb_build_object('type', repeat('x', 201), 'target', 't', 'payload', 1)));
SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-bad') AS effects
FROM idemgate.runs WHERE idempotency_key = 'enqueue-bad';

-- NULL where a value is required: 22004 naming the argument.
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.enqueue_effect(NULL, gen_random_uuid(), 0, ''{}'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.enqueue_effect(''k'', NULL, 0, ''{}'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.enqueue_effect(''k'', gen_random_uuid(), NULL, ''{}'')');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.enqueue_effect(''k'', gen_random_uuid(), 0, NULL)');
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.enqueue_effect('''', gen_random_uuid(), 0, ''{}'')');

-- The bad run can still be enqueued with a good effect afterwards.
SELECT array_length(effect_ids, 1) AS n, version FROM pg_temp.enq('bad', '{"type": "email", "target": "t", "payload": {}}');
