-- Readers see what happened, not the data (docs/operations.md, "Who sees
-- what"). Distinctive values are planted in every place data lives — a
-- payload with a card number, a run's result, an approval card, an
-- endpoint's header value, host and port, a provider's error body, error
-- texts naming a host and port, a corrected payload — then every relation
-- and every function of the reader bundle is read as a reader (each
-- relation whole, or the columns the bundle grants; each function with
-- plain arguments) and the output searched for them, and for the bare
-- SHA-256 of a payload (which would let a reader confirm a guess).
-- Scripted in one transaction, rolled back at the end.
\i test/sql/include/quiet.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
CREATE ROLE rsnd_reader;
SELECT idemgate.grant_role('rsnd_reader', 'reader') \g /dev/null
CREATE FUNCTION pg_temp.owner_of(k text) RETURNS uuid LANGUAGE sql AS
$$ SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k $$;
CREATE FUNCTION pg_temp.version_of(k text) RETURNS bigint LANGUAGE sql AS
$$ SELECT version FROM idemgate.runs WHERE idempotency_key = k $$;
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The plants.
SELECT lives_ok($$SELECT idemgate.register_endpoint('rsnd_mail', 'https://plant-host.example.com:27199/send', '5 s', 1, false,
                     '{"Authorization": "Bearer PLANT-HEADER-SECRET"}')$$, 'an endpoint with a secret header, a host and a port');
-- A run whose effect the provider refused with a body, its run dead letter.
SELECT is((SELECT outcome FROM idemgate.claim('rsnd-1', '{"card": "4111111111111111", "note": "PLANT-PAYLOAD"}', workflow => 'rsnd')),
          'claimed', 'a claim with a card number');
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('rsnd-1', pg_temp.owner_of('rsnd-1'), pg_temp.version_of('rsnd-1'),
             '{"type": "rsnd_mail", "target": "t1", "payload": {"body": "PLANT-EFFECT-PAYLOAD"}}')), 1, 'its effect');
SELECT idemgate.set_actions_enabled(true, 'rsnd', 'test') \g /dev/null
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected',
                    'HTTP 400: {"error": "PLANT-BODY"} (Failed to connect to plant-host.example.com port 27199)', NULL, 400)
             FROM idemgate.claim_effects('rsnd_mail')), 'failed', 'the provider refused it with a body');
SELECT is((SELECT idemgate.reinject(id, 'rsnd-op', '{"body": "PLANT-CORRECTED"}') FROM idemgate.dead_letters WHERE idempotency_key = 'rsnd-1'),
          true, 'reinjected with a corrected payload');
-- A run failed with an error text naming a host and port, and a result.
SELECT is((SELECT outcome FROM idemgate.claim('rsnd-2', '{"card": "4111111111111111"}', workflow => 'rsnd')), 'claimed', 'a second run');
SELECT is(idemgate.fail('rsnd-2', pg_temp.owner_of('rsnd-2'), pg_temp.version_of('rsnd-2'), 'provider',
                        'PLANT-ERROR: Failed to connect to 10.9.8.7 port 27199', false), 'failed_terminal', 'failed with a host in the error');
SELECT is((SELECT outcome FROM idemgate.claim('rsnd-3', '{"n": 3}', workflow => 'rsnd')), 'claimed', 'a third run');
SELECT ok(idemgate.cas_transition('rsnd-3', pg_temp.owner_of('rsnd-3'), pg_temp.version_of('rsnd-3'), 'completed',
                                  '{"answer": "PLANT-RESULT"}') > 0, 'completed with a result');
-- An approval with a card.
SELECT is((SELECT outcome FROM idemgate.claim('rsnd-4', '{"n": 4}', workflow => 'rsnd')), 'claimed', 'a run to approve');
SELECT is((SELECT count(*) FROM idemgate.request_approval('rsnd-4', pg_temp.owner_of('rsnd-4'), pg_temp.version_of('rsnd-4'),
             '{"type": "rsnd_mail", "target": "t4", "payload": {"body": "PLANT-APPROVAL-PAYLOAD"}}', '1 day',
             '{"title": "PLANT-CARD"}')), 1::bigint, 'an approval with a card');
-- A takeover (its event carries a payload hash).
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'rsnd-4';
UPDATE idemgate.runs SET state = 'processing' WHERE idempotency_key = 'rsnd-4';
SELECT is((SELECT outcome FROM idemgate.claim('rsnd-4', '{"n": 4}')), 'recovered', 'a takeover');

-- What the reader may read, all of it, as text: one query per member of
-- its bundle (made here, run as the reader).
CREATE TEMP TABLE q AS
SELECT COALESCE(b.rel::text, b.fn) AS what,
       CASE WHEN b.rel IS NOT NULL
            THEN format('SELECT string_agg(t::text, E''\n'') FROM (SELECT %s FROM %s) t',
                        COALESCE((SELECT string_agg(quote_ident(c), ', ') FROM unnest(b.columns) c), '*'), b.rel)
            ELSE format('SELECT string_agg(t::text, E''\n'') FROM %s(%s) t', p.oid::regproc,
                        -- plain arguments for the ones without a default
                        COALESCE((SELECT string_agg(CASE format_type(a.t, NULL)
                                                      WHEN 'text' THEN '''rsnd-1'''
                                                      WHEN 'uuid' THEN 'gen_random_uuid()'
                                                      WHEN 'interval' THEN '''1 second''::interval'
                                                      WHEN 'boolean' THEN 'false'
                                                      WHEN 'timestamp with time zone' THEN 'now() - interval ''1 day'''
                                                      ELSE 'NULL' END, ', ' ORDER BY a.n)
                                    FROM unnest(p.proargtypes[0:p.pronargs - p.pronargdefaults - 1]) WITH ORDINALITY AS a(t, n)), ''))
       END AS sql
  FROM idemgate.bundle_members b
  LEFT JOIN pg_proc p ON p.oid = b.fn::regprocedure
 WHERE b.bundle = 'reader';
GRANT SELECT ON q TO rsnd_reader;
CREATE FUNCTION pg_temp.reader_output() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  m record;
  part text;
  out text := '';
BEGIN
  FOR m IN SELECT * FROM q ORDER BY what LOOP
    EXECUTE m.sql INTO part;
    out := out || E'\n' || m.what || E':\n' || COALESCE(part, '');
  END LOOP;
  RETURN out;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.reader_output() TO rsnd_reader;
SELECT cmp_ok((SELECT count(*) FROM q), '>=', 20::bigint, 'every member of the reader bundle is read');
CREATE TEMP TABLE seen AS SELECT pg_temp.as_role('rsnd_reader', 'SELECT pg_temp.reader_output()') AS t;
SELECT cmp_ok(length(t), '>', 1000, 'the reader read every relation and function of its bundle') FROM seen;
SELECT ok(t LIKE '%rsnd-1%' AND t LIKE '%dead_lettered%' AND t LIKE '%rejected%', 'what happened is there: keys, events, classes')
  FROM seen;
SELECT is((SELECT string_agg(marker, ', ') FROM seen, unnest(ARRAY[
             '4111111111111111', 'PLANT-PAYLOAD', 'PLANT-EFFECT-PAYLOAD', 'PLANT-BODY', 'PLANT-CORRECTED', 'PLANT-ERROR',
             'PLANT-RESULT', 'PLANT-CARD', 'PLANT-APPROVAL-PAYLOAD', 'PLANT-HEADER-SECRET', 'plant-host', '10.9.8.7']) marker
            WHERE position(marker IN t) > 0), NULL, 'no payload, result, card, body, header value or host');
-- The port as a number of its own: not inside a timestamp's fraction, a
-- longer number or a hex id, where the same five digits turn up by chance.
SELECT ok(t !~ '(^|[^0-9a-f.])27199([^0-9a-f]|$)', 'no port') FROM seen;
SELECT is((SELECT string_agg(r.idempotency_key, ', ') FROM seen, idemgate.runs r
            WHERE position(encode(r.payload_hash, 'hex') IN t) > 0), NULL, 'no bare payload hash');
-- The operator still sees the data (the dead letter, the effect).
SELECT ok((SELECT payload::text FROM idemgate.outbox WHERE idempotency_key = 'rsnd-1') LIKE '%PLANT-CORRECTED%',
          'the corrected payload is in the effect row');
SELECT ok((SELECT error FROM idemgate.dead_letters WHERE idempotency_key = 'rsnd-1') LIKE '%PLANT-BODY%',
          'the provider''s body is in the dead letter for operators');

SELECT * FROM finish();
ROLLBACK;
