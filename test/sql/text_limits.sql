-- Bounded free texts and error echoes. The error text of fail and
-- fail_effect is kept to 8192 bytes (cut on a character boundary, then
-- " [truncated]") instead of being refused: a provider's 1 MB HTML error
-- page must not stop the failure from being recorded, nor be copied whole
-- into runs, dead letters and events. Error messages that echo a
-- caller-supplied value echo at most 64 bytes of it, then "...".
\i test/sql/include/pgtap.psql
-- The probes below put 1 MB texts inside documents: let documents be
-- larger than idemgate.max_document_size's 1 MB here (test/sql/size_limits.sql).
SET idemgate.max_document_size = '4MB';
-- fail_run(key, error): claims key and fails it terminally with error.
CREATE FUNCTION pg_temp.fail_run(k text, err text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  RETURN idemgate.fail(k, c.lease_owner, c.version, 'provider', err, false);
END $$;
-- stored(key): what the run's dead letter, its dead_lettered event and the
-- run's result keep of the error (1.3: the event keeps none of it, since
-- readers see events and errors quote hosts and provider bodies).
CREATE FUNCTION pg_temp.stored(k text) RETURNS TABLE(dead_letter int, event int, result int, tail text, same boolean)
LANGUAGE sql AS $$
  SELECT octet_length(d.error), octet_length(e.details->>'error'), octet_length(r.result->>'error'),
         right(d.error, 14), d.error = r.result->>'error' AND NOT e.details ? 'error'
  FROM idemgate.dead_letters d
  JOIN idemgate.events e ON e.idempotency_key = d.idempotency_key AND e.kind = 'dead_lettered'
  JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
  WHERE d.idempotency_key = k $$;

SELECT * FROM no_plan();

-- fail with a 1 MB error: recorded, cut to 8192 bytes + marker everywhere.
SELECT is(pg_temp.fail_run('text_limits-1mb', repeat('x', 1048576)), 'failed_terminal', 'a 1 MB error: the run fails');
SELECT results_eq($$SELECT * FROM pg_temp.stored('text_limits-1mb')$$,
                  $$VALUES (8204, NULL::int, 8204, 'xx [truncated]', true)$$,
                  'a 1 MB error: 8192 bytes + marker in the dead letter and the run''s result, none in its event');
SELECT ok(left(error, 8192) = repeat('x', 8192), 'a 1 MB error: the start is kept')
FROM idemgate.dead_letters WHERE idempotency_key = 'text_limits-1mb';
-- Exactly 8192 bytes is kept as is; 8193 is cut.
SELECT is(pg_temp.fail_run('text_limits-8192', repeat('y', 8192)), 'failed_terminal', '8192 bytes: the run fails');
SELECT results_eq($$SELECT dead_letter, event, result, same FROM pg_temp.stored('text_limits-8192')$$,
                  $$VALUES (8192, NULL::int, 8192, true)$$, '8192 bytes are kept as they are');
SELECT is(pg_temp.fail_run('text_limits-8193', repeat('y', 8193)), 'failed_terminal', '8193 bytes: the run fails');
SELECT results_eq($$SELECT dead_letter, event, result, same FROM pg_temp.stored('text_limits-8193')$$,
                  $$VALUES (8204, NULL::int, 8204, true)$$, '8193 bytes are cut to 8192 + marker');
-- Multibyte: never cut inside a character (3-byte €: 2730 whole ones fit).
SELECT is(pg_temp.fail_run('text_limits-mb', repeat('€', 5000)), 'failed_terminal', 'multibyte: the run fails');
SELECT results_eq($$SELECT dead_letter, length(error), error = repeat('€', 2730) || ' [truncated]'
                      FROM pg_temp.stored('text_limits-mb'), idemgate.dead_letters WHERE idempotency_key = 'text_limits-mb'$$,
                  $$VALUES (8202, 2742, true)$$, 'multibyte: cut after 2730 whole characters');
-- NULL stays allowed.
SELECT is(pg_temp.fail_run('text_limits-null', NULL), 'failed_terminal', 'a NULL error: the run fails');
SELECT ok(error IS NULL, 'a NULL error stays NULL') FROM idemgate.dead_letters WHERE idempotency_key = 'text_limits-null';

-- fail_effect with a 1 MB error (rejected → failed + dead letter).
CREATE FUNCTION pg_temp.fail_effect_1mb() RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('text_limits-effect', '{"k": 1}');
  PERFORM idemgate.enqueue_effect('text_limits-effect', c.lease_owner, c.version,
                                  '{"type": "text_limits_mail", "target": "t", "payload": {}}');
  SELECT * INTO e FROM idemgate.claim_effects('text_limits_mail');
  RETURN idemgate.fail_effect(e.effect_id, e.lease_owner, 'rejected', repeat('z', 1048576));
END $$;
SELECT is(pg_temp.fail_effect_1mb(), 'failed', 'fail_effect with a 1 MB error: failed');
SELECT results_eq($$SELECT o.state, octet_length(o.last_error), octet_length(d.error),
                           octet_length(ev.details->>'error'), right(d.error, 14)
                      FROM idemgate.outbox o
                      JOIN idemgate.dead_letters d ON d.effect_id = o.effect_id
                      JOIN idemgate.events ev ON ev.effect_id = o.effect_id AND ev.kind = 'dead_lettered'
                     WHERE o.idempotency_key = 'text_limits-effect'$$,
                  $$VALUES ('failed', 8204, 8204, NULL::int, 'zz [truncated]')$$,
                  'fail_effect: 8192 bytes + marker on the outbox row and the dead letter, none in its event');

-- Echoes: a 1 MB bogus value gives a short 22023 message (64 bytes of it, then ...).
SELECT is((SELECT outcome FROM idemgate.claim('text_limits-echo', '{}', '5 minutes', NULL, '00000000-0000-4000-8000-0000000000c1')),
          'claimed', 'a run to echo against');
SELECT throws_ok(q, '22023', m, left(q, 60)) FROM (VALUES
  ($$SELECT idemgate.cas_transition('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0, repeat('s', 1048576))$$,
   'argument "new_state" must be a run state, not "' || repeat('s', 64) || '..."'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), repeat('c', 1048576))$$,
   'argument "error_class" must be a known error class, not "' || repeat('c', 64) || '..."'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'k', 'payload', 1, repeat('f', 1048576), 1))$$,
   'unknown field "' || repeat('f', 64) || '..." in argument "request" of claim'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'k', 'payload', 1, 'lease', repeat('l', 1048576)))$$,
   'field "lease" of argument "request" must be an interval (a string such as "5 minutes", or a number of seconds), not "' || repeat('l', 64) || '..."'),
  ($$SELECT * FROM idemgate.enqueue_effect('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0,
                          jsonb_build_object('type', 't', 'target', 't', 'payload', 1, repeat('u', 1048576), 1))$$,
   'effects has unknown field "' || repeat('u', 64) || '..."'),
  ($$SELECT * FROM idemgate.validate('{}', jsonb_build_object(repeat('k', 1048576), 1))$$,
   'unsupported JSON Schema keyword "' || repeat('k', 64) || '..." in argument "schema" at $'),
  ($$SELECT idemgate.register_endpoint('text_limits_ep', 'http://' || repeat('h', 2000) || '.example/')$$,
   'argument "url" is not allowed: plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to '
   || repeat('h', 64) || '...')
) AS t(q, m);
-- The detail naming a bad header name is short too.
CREATE FUNCTION pg_temp.detail_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL; RETURN SQLSTATE || ': ' || d; END $$;
SELECT is(pg_temp.detail_of($$SELECT idemgate.register_endpoint('text_limits_ep', 'https://example.com', headers => jsonb_build_object(repeat('h', 1048576), 'v'))$$),
          '22023: Header name: "' || repeat('h', 64) || '...".', 'a bad header name: its detail echoes 64 bytes');
-- Multibyte echo: cut on a character boundary (64 bytes hold 21 €).
SELECT throws_ok($$SELECT idemgate.cas_transition('text_limits-echo', '00000000-0000-4000-8000-0000000000c1', 0, repeat('€', 1000))$$,
                 '22023', 'argument "new_state" must be a run state, not "' || repeat('€', 21) || '..."',
                 'a multibyte echo is cut on a character boundary');
SELECT results_eq($$SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'text_limits-echo'$$,
                  $$VALUES ('processing', 0::bigint)$$, 'the refused calls changed nothing');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
