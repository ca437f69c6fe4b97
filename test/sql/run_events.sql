-- What the audit trail records of a run (docs/operations.md, "The audit
-- trail"): the trigger's origin (claim's optional origin, typed and jsonb
-- forms), the input hash, the state a takeover took the run from, on fail
-- the error class and failure count; and no host names in the events a
-- reader sees. pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The first claim is recorded by the run row: key_history shows its
-- origin and the input's keyed hash (1.3: HMAC-SHA-256 of the payload hash
-- under the installation's secret, so a reader cannot confirm a guess).
SELECT results_eq($$SELECT outcome FROM idemgate.claim('ev-1', '{"order": 4471}', '1 minute', 'ev-wf', origin => 'webhook:shop')$$,
                  $$VALUES ('claimed')$$, 'typed claim with origin');
SELECT results_eq($$SELECT origin FROM idemgate.runs WHERE idempotency_key = 'ev-1'$$, $$VALUES ('webhook:shop')$$, 'the run keeps its origin');
SELECT results_eq($$SELECT details FROM idemgate.key_history WHERE idempotency_key = 'ev-1' AND kind = 'claimed'$$,
                  $$SELECT jsonb_build_object('origin', 'webhook:shop', 'workflow', 'ev-wf',
                                             'payload_hmac', idemgate.payload_hmac(idemgate.hash_payload('{"order": 4471}')))$$,
                  'key_history: the first claim with its origin and keyed input hash');
SELECT results_eq($$SELECT details->>'payload_hmac' <> encode(idemgate.hash_payload('{"order": 4471}'), 'hex')
                      FROM idemgate.key_history WHERE idempotency_key = 'ev-1' AND kind = 'claimed'$$,
                  $$VALUES (true)$$, 'not the bare SHA-256');
SELECT results_eq($$SELECT outcome FROM idemgate.claim('{"key": "ev-2", "payload": {"order": 4472}, "origin": "schedule:nightly"}'::jsonb)$$,
                  $$VALUES ('claimed')$$, 'claim(jsonb) with origin');
SELECT results_eq($$SELECT origin FROM idemgate.runs WHERE idempotency_key = 'ev-2'$$, $$VALUES ('schedule:nightly')$$,
                  'the jsonb form keeps it too');
SELECT results_eq($$SELECT outcome FROM idemgate.claim('ev-3', '{}')$$, $$VALUES ('claimed')$$, 'a claim without origin');
SELECT results_eq($$SELECT origin IS NULL, details ? 'origin' FROM idemgate.runs JOIN idemgate.key_history USING (idempotency_key)
                     WHERE idempotency_key = 'ev-3'$$,
                  $$VALUES (true, false)$$, 'no origin: NULL, and none in key_history');

-- A duplicate delivery records where it came from (the run's origin stays
-- the first claim's).
SELECT results_eq($$SELECT outcome FROM idemgate.claim('ev-1', '{"order": 4471}', origin => 'webhook:shop-retry')$$,
                  $$VALUES ('duplicate')$$, 'a duplicate delivery');
SELECT results_eq($$SELECT details FROM idemgate.events WHERE idempotency_key = 'ev-1' AND kind = 'duplicate'$$,
                  $$VALUES ('{"state": "processing", "origin": "webhook:shop-retry", "version": 0, "workflow": "ev-wf"}'::jsonb)$$,
                  'the duplicate event carries the origin');
SELECT results_eq($$SELECT origin FROM idemgate.runs WHERE idempotency_key = 'ev-1'$$, $$VALUES ('webhook:shop')$$,
                  'the run keeps the first origin');

-- A takeover records the state it took the run from, its origin and the
-- input hash: an expired lease ...
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'ev-1';
SELECT results_eq($$SELECT outcome, version FROM idemgate.claim('ev-1', '{"order": 4471}', '1 minute', origin => 'manual:rerun')$$,
                  $$VALUES ('recovered', 1::bigint)$$, 'an expired lease taken over');
SELECT results_eq($$SELECT details - 'lease_owner' FROM idemgate.events WHERE idempotency_key = 'ev-1' AND kind = 'recovered'$$,
                  $$SELECT jsonb_build_object('from', 'processing', 'origin', 'manual:rerun', 'version', 1, 'workflow', 'ev-wf',
                                             'payload_hmac', idemgate.payload_hmac(idemgate.hash_payload('{"order": 4471}')))$$,
                  'recovered: from processing (a lease takeover), origin, keyed input hash');
SELECT results_eq($$SELECT recovered_from FROM idemgate.runs WHERE idempotency_key = 'ev-1'$$, $$VALUES ('processing')$$,
                  'runs.recovered_from');
-- ... or a redelivery of a retryable failure, whose fail event carries the
-- error class and the failure count.
SELECT results_eq($$SELECT idemgate.fail('ev-1', lease_owner, version, 'rate_limited', 'HTTP 429 from crm', true) FROM idemgate.runs WHERE idempotency_key = 'ev-1'$$,
                  $$VALUES ('failed_retryable')$$, 'a retryable failure');
SELECT results_eq($$SELECT details->'info' FROM idemgate.events WHERE idempotency_key = 'ev-1' AND kind = 'state_changed'$$,
                  $$VALUES ('{"failures": 1, "retryable": true, "error_class": "rate_limited"}'::jsonb)$$,
                  'fail: error class and failure count, not the error text');
SELECT results_eq($$SELECT outcome FROM idemgate.claim('{"key": "ev-1", "payload": {"order": 4471}, "origin": "n8n:retry"}'::jsonb)$$,
                  $$VALUES ('recovered')$$, 'redelivered');
SELECT results_eq($$SELECT details->>'from', details->>'origin' FROM idemgate.events WHERE idempotency_key = 'ev-1' AND kind = 'recovered' ORDER BY id$$,
                  $$VALUES ('processing', 'manual:rerun'), ('failed_retryable', 'n8n:retry')$$,
                  'recovered: from failed_retryable (a redelivery)');

-- The claim statement keeps the origin of a new run too (the direct path
-- declines a runs table with a trigger; so does it a lost insert race).
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER run_events_noop BEFORE INSERT ON idemgate.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT results_eq($$SELECT outcome FROM idemgate.claim('ev-4', '{}', origin => 'webhook:statement')$$, $$VALUES ('claimed')$$,
                  'a claim through the statement');
DROP TRIGGER run_events_noop ON idemgate.runs;
SELECT results_eq($$SELECT origin FROM idemgate.runs WHERE idempotency_key = 'ev-4'$$, $$VALUES ('webhook:statement')$$, 'origin kept');
-- A duplicate in a repeatable-read transaction goes through the statement.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT results_eq($$SELECT outcome FROM idemgate.claim('ev-4', '{}', origin => 'webhook:rr-dup')$$, $$VALUES ('duplicate')$$,
                  'a duplicate through the statement');
COMMIT;
SELECT results_eq($$SELECT details->>'origin' FROM idemgate.events WHERE idempotency_key = 'ev-4' AND kind = 'duplicate'$$,
                  $$VALUES ('webhook:rr-dup')$$, 'its event carries the origin');

-- Bad origins: 22023 naming the argument or field, nothing written.
SELECT throws_ok($$SELECT * FROM idemgate.claim('ev-bad', '{}', origin => '')$$, '22023',
                 'argument "origin" must be between 1 and 200 bytes long, not 0', 'an empty origin');
SELECT throws_ok($$SELECT * FROM idemgate.claim('ev-bad', '{}', origin => repeat('o', 201))$$, '22023',
                 'argument "origin" must be between 1 and 200 bytes long, not 201', 'a 201-byte origin');
SELECT throws_ok($$SELECT * FROM idemgate.claim('{"key": "ev-bad", "payload": {}, "origin": ""}'::jsonb)$$, '22023',
                 'argument "origin" must be between 1 and 200 bytes long, not 0', 'jsonb: an empty origin');
SELECT throws_ok($$SELECT * FROM idemgate.claim('{"key": "ev-bad", "payload": {}, "origin": 7}'::jsonb)$$, '22023',
                 'field "origin" of argument "request" must be a JSON string', 'jsonb: a number');
SELECT throws_ok($$SELECT * FROM idemgate.claim(jsonb_build_object('key', 'ev-bad', 'payload', '{}'::jsonb, 'origin', repeat('o', 201)))$$, '22023',
                 'argument "origin" must be between 1 and 200 bytes long, not 201', 'jsonb: 201 bytes');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'ev-bad'), 0::bigint, 'nothing written');
SELECT results_eq($$SELECT outcome FROM idemgate.claim('{"key": "ev-5", "payload": {}, "origin": null}'::jsonb)$$,
                  $$VALUES ('claimed')$$, 'jsonb: origin null is no origin');

-- No host names in the events a reader sees: endpoint_registered keeps a
-- fingerprint of the host (16 hex digits of its SHA-256), so two
-- registrations can be told apart, not the host.
SELECT idemgate.register_endpoint('ev_crm', 'https://crm.internal.example/api/notes?key=s3cr3t') \g /dev/null
SELECT idemgate.register_endpoint('ev_crm', 'https://crm2.internal.example/api/notes') \g /dev/null
CREATE ROLE run_events_reader;
SELECT idemgate.grant_role('run_events_reader', 'reader') \g /dev/null
SELECT is(pg_temp.as_role('run_events_reader',
                          $$SELECT count(*) FROM idemgate.events WHERE details::text ~ 'internal|s3cr3t|/api' OR details ? 'host'$$),
          '0', 'a reader sees no host, path or query of an endpoint in the events');
SELECT is(pg_temp.as_role('run_events_reader',
                          $$SELECT string_agg(details->>'host_sha256', ' ' ORDER BY id) FROM idemgate.events
                             WHERE kind = 'endpoint_registered' AND details->>'effect_type' = 'ev_crm'$$),
          left(encode(sha256('crm.internal.example'), 'hex'), 16) || ' ' || left(encode(sha256('crm2.internal.example'), 'hex'), 16),
          'the fingerprints differ when the host changes');
SELECT idemgate.revoke_role('run_events_reader', 'reader') \g /dev/null
DROP ROLE run_events_reader;
SELECT idemgate.unregister_endpoint('ev_crm', 'test') \g /dev/null

SELECT * FROM finish();

RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
