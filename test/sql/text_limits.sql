-- Bounded free texts and error echoes. The error text of fail and
-- fail_effect is kept to 8192 bytes (cut on a character boundary, then
-- " [truncated]") instead of being refused: a provider's 1 MB HTML error
-- page must not stop the failure from being recorded, nor be copied whole
-- into runs, dead letters and events. Error messages that echo a
-- caller-supplied value echo at most 64 bytes of it, then "...".
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
-- The probes below put 1 MB texts inside documents: let documents be
-- larger than idemgate.max_document_size's 1 MB here (test/sql/size_limits.sql).
SET idemgate.max_document_size = '4MB';
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- fail_run(key, error): claims key and fails it terminally with error.
CREATE FUNCTION pg_temp.fail_run(k text, err text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  RETURN idemgate.fail(k, c.lease_owner, c.version, 'provider', err, false);
END $$;
-- stored(key): what the run's dead letter, its dead_lettered event and the
-- run's result keep of the error.
CREATE FUNCTION pg_temp.stored(k text) RETURNS TABLE(dead_letter int, event int, result int, tail text, same boolean)
LANGUAGE sql AS $$
  SELECT octet_length(d.error), octet_length(e.details->>'error'), octet_length(r.result->>'error'),
         right(d.error, 14), d.error = e.details->>'error' AND d.error = r.result->>'error'
  FROM idemgate.dead_letters d
  JOIN idemgate.events e ON e.idempotency_key = d.idempotency_key AND e.kind = 'dead_lettered'
  JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
  WHERE d.idempotency_key = k $$;

-- fail with a 1 MB error: recorded, cut to 8192 bytes + marker everywhere.
SELECT pg_temp.fail_run('text_limits-1mb', repeat('x', 1048576)) AS state;
SELECT * FROM pg_temp.stored('text_limits-1mb');
SELECT left(error, 8192) = repeat('x', 8192) AS kept_the_start
FROM idemgate.dead_letters WHERE idempotency_key = 'text_limits-1mb';
-- Exactly 8192 bytes is kept as is; 8193 is cut.
SELECT pg_temp.fail_run('text_limits-8192', repeat('y', 8192)) AS state;
SELECT dead_letter, event, result, same FROM pg_temp.stored('text_limits-8192');
SELECT pg_temp.fail_run('text_limits-8193', repeat('y', 8193)) AS state;
SELECT dead_letter, event, result, same FROM pg_temp.stored('text_limits-8193');
-- Multibyte: never cut inside a character (3-byte €: 2730 whole ones fit).
SELECT pg_temp.fail_run('text_limits-mb', repeat('€', 5000)) AS state;
SELECT dead_letter, length(error) AS chars, error = repeat('€', 2730) || ' [truncated]' AS whole_chars
FROM pg_temp.stored('text_limits-mb'), idemgate.dead_letters WHERE idempotency_key = 'text_limits-mb';
-- NULL stays allowed.
SELECT pg_temp.fail_run('text_limits-null', NULL) AS state;
SELECT error IS NULL AS no_error FROM idemgate.dead_letters WHERE idempotency_key = 'text_limits-null';

-- fail_effect with a 1 MB error (rejected → failed + dead letter).
DO $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('text_limits-effect', '{"k": 1}');
  PERFORM idemgate.enqueue_effect('text_limits-effect', c.lease_owner, c.version,
                                  '{"type": "text_limits_mail", "target": "t", "payload": {}}');
  SELECT * INTO e FROM idemgate.claim_effects('text_limits_mail');
  RAISE WARNING 'fail_effect: %', idemgate.fail_effect(e.effect_id, e.lease_owner, 'rejected', repeat('z', 1048576));
END $$;
SELECT o.state, octet_length(o.last_error) AS last_error, octet_length(d.error) AS dead_letter,
       octet_length(ev.details->>'error') AS event, right(d.error, 14) AS tail
FROM idemgate.outbox o
JOIN idemgate.dead_letters d ON d.effect_id = o.effect_id
JOIN idemgate.events ev ON ev.effect_id = o.effect_id AND ev.kind = 'dead_lettered'
WHERE o.idempotency_key = 'text_limits-effect';

-- Echoes: a 1 MB bogus value gives a short 22023 message.
SELECT outcome FROM idemgate.claim('text_limits-echo', '{}', '5 minutes', NULL, '00000000-0000-4000-8000-0000000000c1');
SELECT length(m) AS message_length, m AS message FROM (VALUES
  (pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0, repeat('s', 1048576))$$)),
  (pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), repeat('c', 1048576))$$)),
  (pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'k', 'payload', 1, repeat('f', 1048576), 1))$$)),
  (pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'k', 'payload', 1, 'lease', repeat('l', 1048576)))$$)),
  (pg_temp.sqlstate_of($$SELECT * FROM idemgate.enqueue_effect('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0,
                          jsonb_build_object('type', 't', 'target', 't', 'payload', 1, repeat('u', 1048576), 1))$$)),
  (pg_temp.sqlstate_of($$SELECT * FROM idemgate.validate('{}', jsonb_build_object(repeat('k', 1048576), 1))$$)),
  (pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('text_limits_ep', 'http://' || repeat('h', 2000) || '.example/')$$))
) AS t(m);
-- The detail naming a bad header name is short too.
CREATE FUNCTION pg_temp.detail_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL; RETURN SQLSTATE || ': ' || d; END $$;
SELECT pg_temp.detail_of($$SELECT idemgate.register_endpoint('text_limits_ep', 'https://example.com', headers => jsonb_build_object(repeat('h', 1048576), 'v'))$$);
-- Multibyte echo: cut on a character boundary (64 bytes hold 21 €).
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cas_transition('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0, repeat('€', 1000))$$);
SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'text_limits-echo';
