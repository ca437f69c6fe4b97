-- enqueue_effect: the automatic path. Owner-checked; inserts the effects and
-- approves the run in one step; the same (key, type, target) never twice;
-- malformed effects are refused naming the problem, and change nothing.
-- pgTAP.
\i test/sql/include/pgtap.psql

CREATE TEMP TABLE runs_t (name text PRIMARY KEY, key text, owner uuid, version bigint);
CREATE FUNCTION pg_temp.claim_as(p_name text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('enqueue-' || p_name, jsonb_build_object('n', p_name));
  INSERT INTO runs_t VALUES (p_name, c.idempotency_key, c.lease_owner, c.version)
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, version = excluded.version;
END $$;
CREATE FUNCTION pg_temp.enq(name text, effects jsonb) RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE sql AS $$
  SELECT e.* FROM runs_t r, idemgate.enqueue_effect(r.key, r.owner, r.version, effects) e
  WHERE r.name = enq.name $$;
SELECT * FROM no_plan();

-- One effect object: one outbox row, run approved, version + 1.
SELECT pg_temp.claim_as('one') \g /dev/null
CREATE TEMP TABLE got AS
  SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}');
SELECT results_eq('SELECT array_length(effect_ids, 1), version, review_requested FROM got', $$VALUES (1, 1::bigint, NULL::jsonb)$$,
                  'one effect id, version 1, no review (no policy)');
SELECT results_eq($$SELECT o.effect_id = g.effect_ids[1], o.effect_type, o.target, o.payload, o.state, o.attempts
                      FROM idemgate.outbox o, got g WHERE o.idempotency_key = 'enqueue-one'$$,
                  $$VALUES (true, 'email', 'ana@example.com', '{"subject": "Hola"}'::jsonb, 'pending', 0)$$,
                  'one pending outbox row with that id');
SELECT results_eq($$SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'enqueue-one'$$,
                  $$VALUES ('approved', 1::bigint)$$, 'the run is approved');
SELECT results_eq($$SELECT kind, actor, details - 'effect_ids' - 'processing_ms',
                           details->'effect_ids' = (SELECT to_jsonb(effect_ids) FROM got)
                      FROM idemgate.events WHERE idempotency_key = 'enqueue-one' AND kind IN ('effects_enqueued', 'state_changed')
                     ORDER BY id$$,
                  $$VALUES ('effects_enqueued', NULL::text, '{"to": "approved", "from": "processing", "version": 1,
                                                       "count": 1, "inserted": 1, "automatic": true}'::jsonb, true)$$,
                  'audited: the enqueued ids and the state change, in one event');

-- The old (owner, version) no longer owns the run: a row of NULLs, nothing added.
SELECT results_eq($$SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "other@example.com", "payload": {}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'the old version: a row of NULLs');
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-one'), 1::bigint, 'nothing added');
-- The live owner with the new version: the run is approved now, so a new
-- effect is IG002 (a new effect needs a new key), alone or beside an old one.
UPDATE runs_t SET version = 1 WHERE name = 'one';
SELECT throws_ok($$SELECT * FROM pg_temp.enq('one', '{"type": "email", "target": "x", "payload": {}}')$$,
                 'IG002', 'run "enqueue-one" is already approved; effects not enqueued before cannot be added',
                 'a new effect on an approved run');
SELECT throws_ok($$SELECT * FROM pg_temp.enq('one', '[{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}},
                                                     {"type": "email", "target": "x", "payload": {}}]')$$,
                 'IG002', 'run "enqueue-one" is already approved; effects not enqueued before cannot be added',
                 'a new effect beside an old one');
-- A replay of exactly what was enqueued (a retried n8n node holding the
-- returned version): the same id and the current version, and nothing
-- changes (no row, no event, no version bump).
SELECT results_eq($$SELECT r.effect_ids = g.effect_ids, r.version
                      FROM pg_temp.enq('one', '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}') r, got g$$,
                  $$VALUES (true, 1::bigint)$$, 'a replay returns the same id and version');
SELECT results_eq($$SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-one'),
                           (SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'enqueue-one')
                      FROM idemgate.runs WHERE idempotency_key = 'enqueue-one'$$,
                  $$VALUES ('approved', 1::bigint, 1::bigint, 1::bigint)$$, 'and changes nothing');
-- The replay is owner-checked like the first call: stale version or stranger → NULLs.
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('enqueue-one', (SELECT owner FROM runs_t WHERE name = 'one'), 0,
                                       '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a replay with a stale version: NULLs');
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('enqueue-one', gen_random_uuid(), 1,
                                       '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Hola"}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a replay by a stranger: NULLs');

-- An array: ids come back in input order, one row per effect.
SELECT pg_temp.claim_as('many') \g /dev/null
CREATE TEMP TABLE got_many AS
  SELECT * FROM pg_temp.enq('many', '[{"type": "email", "target": "b@example.com", "payload": 1},
                                      {"type": "crm", "target": "lead-7", "payload": null},
                                      {"type": "email", "target": "a@example.com", "payload": [1, 2]}]');
SELECT results_eq($$SELECT i, o.effect_type, o.target, o.payload
                      FROM got_many g, unnest(g.effect_ids) WITH ORDINALITY AS u(id, i)
                      JOIN idemgate.outbox o ON o.effect_id = u.id ORDER BY i$$,
                  $$VALUES (1::bigint, 'email', 'b@example.com', '1'::jsonb), (2, 'crm', 'lead-7', 'null'),
                           (3, 'email', 'a@example.com', '[1, 2]')$$,
                  'an array: ids in input order');
SELECT is((SELECT count(DISTINCT u) FROM got_many, unnest(effect_ids) u), 3::bigint, 'three distinct ids');
-- Replaying a subset in another order returns the existing ids in input order.
UPDATE runs_t SET version = (SELECT version FROM got_many) WHERE name = 'many';
SELECT results_eq($$SELECT r.effect_ids = ARRAY[m.effect_ids[3], m.effect_ids[1]], r.version = m.version
                      FROM pg_temp.enq('many', '[{"type": "email", "target": "a@example.com", "payload": [1, 2]},
                                                 {"type": "email", "target": "b@example.com", "payload": 1}]') r, got_many m$$,
                  $$VALUES (true, true)$$, 'a subset replayed in another order: the existing ids in input order');
SELECT is((SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'enqueue-many' AND kind = 'effects_enqueued'),
          1::bigint, 'the replay wrote no event');

-- A stranger (random owner) and a wrong version change nothing.
SELECT pg_temp.claim_as('stranger') \g /dev/null
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('enqueue-stranger', gen_random_uuid(), 0,
                                       '{"type": "email", "target": "t", "payload": {}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a stranger: NULLs');
SELECT results_eq($$SELECT e.* FROM runs_t r, idemgate.enqueue_effect(r.key, r.owner, r.version + 7,
                                       '{"type": "email", "target": "t", "payload": {}}') e
                     WHERE r.name = 'stranger'$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a wrong version: NULLs');
SELECT results_eq($$SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-stranger')
                      FROM idemgate.runs WHERE idempotency_key = 'enqueue-stranger'$$,
                  $$VALUES ('processing', 0::bigint, 0::bigint)$$, 'the run is unchanged');
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('enqueue-no-such-key', gen_random_uuid(), 0,
                                       '{"type": "email", "target": "t", "payload": {}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'an unknown key: NULLs');

-- Re-enqueue after the run came back (as a reinjected run does): the same
-- (key, type, target) returns the existing effect, only the new one is added.
UPDATE idemgate.runs SET state = 'failed_retryable' WHERE idempotency_key = 'enqueue-many';
SELECT pg_temp.claim_as('many') \g /dev/null
CREATE TEMP TABLE got_again AS
  SELECT * FROM pg_temp.enq('many', '[{"type": "email", "target": "a@example.com", "payload": "changed"},
                                      {"type": "sms", "target": "+34600000000", "payload": {}}]');
SELECT results_eq($$SELECT g.effect_ids[1] = m.effect_ids[3], g.effect_ids[2] <> ALL (m.effect_ids)
                      FROM got_again g, got_many m$$,
                  $$VALUES (true, true)$$, 're-enqueue: the existing id for the old effect, a new id for the new one');
SELECT results_eq($$SELECT effect_type, target, payload FROM idemgate.outbox WHERE idempotency_key = 'enqueue-many'
                     ORDER BY effect_type, target$$,
                  $$VALUES ('crm', 'lead-7', 'null'::jsonb), ('email', 'a@example.com', '[1, 2]'),
                           ('email', 'b@example.com', '1'), ('sms', '+34600000000', '{}')$$,
                  'the old effect keeps its payload; only the new one is added');
SELECT results_eq($$SELECT details->'count', details->'inserted' FROM idemgate.events
                     WHERE idempotency_key = 'enqueue-many' AND kind = 'effects_enqueued' ORDER BY id$$,
                  $$VALUES ('3'::jsonb, '3'::jsonb), ('2', '1')$$, 'audited: 2 given, 1 inserted');

-- Malformed effects: 22023 naming the problem; the run stays processing.
SELECT pg_temp.claim_as('bad') \g /dev/null
SELECT throws_ok(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad', e), '22023', m, 'effects ' || regexp_replace(e, '\s+', ' ', 'g')) FROM (VALUES
  ('[]', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('5', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('"email"', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('null', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('true', 'argument "effects" must be an effect object or a non-empty array of effect objects'),
  ('[1]', 'effects[0] must be a JSON object'),
  ('[[]]', 'effects[0] must be a JSON object'),
  ('{}', 'effects.type is missing'),
  ('{"type": "email", "target": "t"}', 'effects.payload is missing'),
  ('{"type": "email", "payload": {}}', 'effects.target is missing'),
  ('{"target": "t", "payload": {}}', 'effects.type is missing'),
  ('{"type": "", "target": "t", "payload": {}}', 'effects.type must be a JSON string of 1 to 200 bytes'),
  ('{"type": "email", "target": "", "payload": {}}', 'effects.target must be a JSON string of 1 to 1024 bytes'),
  ('{"type": 7, "target": "t", "payload": {}}', 'effects.type must be a JSON string of 1 to 200 bytes'),
  ('{"type": "email", "target": ["t"], "payload": {}}', 'effects.target must be a JSON string of 1 to 1024 bytes'),
  ('{"type": null, "target": "t", "payload": {}}', 'effects.type must be a JSON string of 1 to 200 bytes'),
  ('{"type": "email", "target": "t", "payload": {}, "url": "https://evil.example"}', 'effects has unknown field "url"'),
  ('[{"type": "email", "target": "t", "payload": {}}, {"type": "email", "target": "u", "payload": {}},
    {"type": "email", "target": 3, "payload": {}}]', 'effects[2].target must be a JSON string of 1 to 1024 bytes'),
  ('[{"type": "email", "target": "t", "payload": {}}, "x"]', 'effects[1] must be a JSON object'),
  ('[{"type": "email", "target": "t", "payload": 1}, {"type": "sms", "target": "t", "payload": 2},
    {"type": "email", "target": "t", "payload": 3}]', 'effects[2] repeats the type and target of effects[0]')
) AS t(e, m);
SELECT throws_ok(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad',
                        (SELECT jsonb_agg(jsonb_build_object('type', 'e', 'target', 't' || i, 'payload', i))
                           FROM generate_series(1, 1001) i)),
                 '22023', 'argument "effects" holds 1001 effects; at most 1000 are allowed in one call', '1001 effects');
SELECT throws_ok(format('SELECT * FROM pg_temp.enq(%L, %L)', 'bad',
                        jsonb_build_object('type', repeat('x', 201), 'target', 't', 'payload', 1)),
                 '22023', 'effects.type must be a JSON string of 1 to 200 bytes', 'a 201-byte type');
SELECT results_eq($$SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'enqueue-bad')
                      FROM idemgate.runs WHERE idempotency_key = 'enqueue-bad'$$,
                  $$VALUES ('processing', 0::bigint, 0::bigint)$$, 'the refusals changed nothing');

-- NULL where a value is required: 22004 naming the argument.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ('SELECT * FROM idemgate.enqueue_effect(NULL, gen_random_uuid(), 0, ''{}'')', '22004', 'argument "key" must not be NULL'),
  ('SELECT * FROM idemgate.enqueue_effect(''k'', NULL, 0, ''{}'')', '22004', 'argument "owner" must not be NULL'),
  ('SELECT * FROM idemgate.enqueue_effect(''k'', gen_random_uuid(), NULL, ''{}'')', '22004', 'argument "version" must not be NULL'),
  ('SELECT * FROM idemgate.enqueue_effect(''k'', gen_random_uuid(), 0, NULL)', '22004', 'argument "effects" must not be NULL'),
  ('SELECT * FROM idemgate.enqueue_effect('''', gen_random_uuid(), 0, ''{}'')', '22023',
   'argument "key" must be between 1 and 512 bytes long, not 0')
) AS t(q, code, m);

-- The bad run can still be enqueued with a good effect afterwards.
SELECT results_eq($$SELECT array_length(effect_ids, 1), version FROM pg_temp.enq('bad', '{"type": "email", "target": "t", "payload": {}}')$$,
                  $$VALUES (1, 1::bigint)$$, 'a good effect after the refusals');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
