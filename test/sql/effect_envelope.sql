-- effect_envelope: the body the dispatcher posts (SPEC: {"effect_id",
-- "idempotency_key", "effect_type", "target", "payload", "attempt"}) is
-- written as text directly (src/outbox/outbox_dispatch.c); it must be the
-- very text jsonb_build_object of the six values prints, for strings that
-- need escaping, non-ASCII text, nested, empty and scalar payloads. And an
-- effect's id is a time-ordered UUID (version 7): outbox_pkey takes new
-- effects at its right end (bench/README.md, "deliveries flat with
-- history").
\i test/sql/include/quiet.psql
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET search_path = tap, public;
SELECT * FROM no_plan();

CREATE TEMP TABLE envelope_cases (k text, t text, g text, p jsonb, a int);
INSERT INTO envelope_cases VALUES
  ('plain', 'email', 'customer-1', '{"subject": "Order shipped", "n": 1}', 1),
  (E'quote " back \\ slash', E'tab\there', E'line\nbreak', '{"a": [1, 2.50, null, true], "b": {"c": "d"}}', 2),
  ('ñandú 🦆', 'crm', 'ünïcödé', '{"text": "ñ \u00e9 \"q\""}', 17),
  (E'ctl \u0001 \u001f', 'x', '', '{}', 0),
  ('scalar', 'x', 't', '"just a string"', 2147483647),
  ('number', 'x', 't', '12.3400', -1),
  ('array', 'x', 't', '[{"z": 1, "a": 2}, [], {}]', 3),
  ('null', 'x', 't', 'null', 5);

SELECT is(
  (SELECT count(*) FROM envelope_cases c, LATERAL (SELECT gen_random_uuid() AS id) u
    WHERE idemgate.effect_envelope(u.id, c.k, c.t, c.g, c.p, c.a)
          IS DISTINCT FROM jsonb_build_object('effect_id', u.id, 'idempotency_key', c.k,
                 'effect_type', c.t, 'target', c.g, 'payload', c.p, 'attempt', c.a)::text),
  0::bigint, 'the envelope is the text of jsonb_build_object for each of 8 cases');
SELECT is(idemgate.effect_envelope('6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11', 'k', 'email', 'ana', '{"n": 1}', 1),
  '{"target": "ana", "attempt": 1, "payload": {"n": 1}, "effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "effect_type": "email", "idempotency_key": "k"}',
  'the envelope of one effect, spelled out');
SELECT is(idemgate.effect_envelope('6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11', 'k', 'email', 'ana', '{"n": 1}', 1)::jsonb,
  '{"effect_id": "6c1f3a52-3c5e-4d1f-9d59-2b8f2d1e0a11", "idempotency_key": "k", "effect_type": "email", "target": "ana", "payload": {"n": 1}, "attempt": 1}'::jsonb,
  'it parses as the six fields');

-- Effect ids: version 7, their first 48 bits the time in milliseconds, in
-- the order the effects were made.
CREATE TEMP TABLE made AS SELECT clock_timestamp() AS before;
DO $$
DECLARE c record;
BEGIN
  FOR i IN 1..3 LOOP
    SELECT * INTO c FROM idemgate.claim('envelope-' || i, '{}');
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', 'email', 'target', 't-' || i, 'payload', '{}'::jsonb));
    PERFORM pg_sleep(0.002);
  END LOOP;
END $$;
SELECT is((SELECT array_agg(DISTINCT substr(effect_id::text, 15, 1)) FROM idemgate.outbox
            WHERE idempotency_key LIKE 'envelope-%'), ARRAY['7'], 'effect ids are version 7 UUIDs');
SELECT is((SELECT array_agg(idempotency_key ORDER BY effect_id) FROM idemgate.outbox
            WHERE idempotency_key LIKE 'envelope-%'),
          ARRAY['envelope-1', 'envelope-2', 'envelope-3'], 'effect ids sort in the order the effects were made');
SELECT ok((SELECT bool_and(to_timestamp(('x' || substr(replace(effect_id::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
                           BETWEEN date_trunc('milliseconds', m.before) AND clock_timestamp())
           FROM idemgate.outbox, made m WHERE idempotency_key LIKE 'envelope-%'),
          'their first 48 bits are the time they were made, in milliseconds');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
