-- record_validation: validate() as the run's live owner, counted per run
-- (attempt) and audited without the output itself. pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The contract's signature and result columns.
SELECT has_function('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb']);
SELECT is(pg_get_function_arguments('idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)'::regprocedure),
          'key text, owner uuid, version bigint, output jsonb, schema jsonb', 'argument names');
SELECT is(pg_get_function_result('idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)'::regprocedure),
          'TABLE(valid boolean, errors jsonb, attempt integer)', 'result columns');

-- A live run, and a schema of the shape the model must produce.
SELECT lease_owner AS owner, version FROM idemgate.claim('record_validation-1', '{"ticket": 1}',
       workflow => 'record_validation-wf') \gset
\set schema '''{"type": "object", "required": ["category"], "additionalProperties": false, "properties": {"category": {"enum": ["billing", "bug"]}, "reply": {"type": "string", "maxLength": 20}}}'''

-- Attempt 1: invalid (wrong enum value, reply too long, an extra field).
SELECT results_eq(format($$SELECT * FROM idemgate.record_validation('record_validation-1', %L, %s,
    '{"category": "SECRET-OUTPUT-1", "reply": "a reply that is far too long", "x": 1}', %L)$$, :'owner', :version, :schema),
  $$VALUES (false, '[{"path": "$.x", "error": "property \"x\" is not allowed (additionalProperties is false)"}, {"path": "$.reply", "error": "string has 28 characters, more than the maximum of 20"}, {"path": "$.category", "error": "value is not one of [\"billing\", \"bug\"]"}]'::jsonb, 1)$$,
  'attempt 1: invalid, every error with its path');
-- Attempt 2: still invalid (missing required field).
SELECT results_eq(format($$SELECT valid, jsonb_array_length(errors), attempt FROM idemgate.record_validation('record_validation-1', %L, %s,
    '{"reply": "SECRET-OUTPUT-2"}', %L)$$, :'owner', :version, :schema),
  $$VALUES (false, 1, 2)$$, 'attempt 2: invalid, one error');
-- Attempt 3: valid after bounded repair.
SELECT results_eq(format($$SELECT * FROM idemgate.record_validation('record_validation-1', %L, %s,
    '{"category": "bug", "reply": "SECRET-OUTPUT-3"}', %L)$$, :'owner', :version, :schema),
  $$VALUES (true, '[]'::jsonb, 3)$$, 'attempt 3: valid');

-- The counter and the audit trail: verdict, attempt and error count, in
-- order; never the output nor the error messages that quote it.
SELECT is((SELECT validations FROM idemgate.runs WHERE idempotency_key = 'record_validation-1'), 3, 'three validations counted');
SELECT results_eq($$SELECT kind, details FROM idemgate.events WHERE idempotency_key = 'record_validation-1' ORDER BY id$$,
  $$VALUES ('validation_recorded', '{"valid": false, "attempt": 1, "error_count": 3}'::jsonb),
           ('validation_recorded', '{"valid": false, "attempt": 2, "error_count": 1}'::jsonb),
           ('validation_recorded', '{"valid": true, "attempt": 3, "error_count": 0}'::jsonb)$$,
  'one event per attempt: verdict, attempt, error count');
SELECT is((SELECT count(*) FROM idemgate.events
            WHERE details::text LIKE '%SECRET-OUTPUT%' OR details::text LIKE '%too long%'), 0::bigint,
          'no event quotes the output');

-- Ownership lost: a row of NULLs, nothing counted, no event.
SELECT results_eq(q, $$VALUES (NULL::boolean, NULL::jsonb, NULL::integer)$$, d) FROM (VALUES
  (format($$SELECT * FROM idemgate.record_validation('record_validation-1', %L, %s, '{"category": "bug"}', %L)$$,
          :'owner', :version + 1, :schema), 'a stale version: a row of NULLs'),
  (format($$SELECT * FROM idemgate.record_validation('record_validation-1', gen_random_uuid(), %s, '{"category": "bug"}', %L)$$,
          :version, :schema), 'another owner: a row of NULLs'),
  (format($$SELECT * FROM idemgate.record_validation('record_validation-nokey', %L, %s, '{"category": "bug"}', %L)$$,
          :'owner', :version, :schema), 'an unknown key: a row of NULLs')
) AS t(q, d);
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'record_validation-1';
SELECT results_eq(format($$SELECT * FROM idemgate.record_validation('record_validation-1', %L, %s, '{"category": "bug"}', %L)$$,
                         :'owner', :version, :schema),
                  $$VALUES (NULL::boolean, NULL::jsonb, NULL::integer)$$, 'an expired lease: a row of NULLs');
SELECT results_eq($$SELECT validations, (SELECT count(*) FROM idemgate.events e WHERE e.idempotency_key = 'record_validation-1'
                                          AND e.kind = 'validation_recorded')
                      FROM idemgate.runs WHERE idempotency_key = 'record_validation-1'$$,
                  $$VALUES (3, 3::bigint)$$, 'nothing counted, no event');

-- A new owner (recovered after the lease expired) continues the count.
SELECT outcome, lease_owner AS owner2, version AS version2 FROM idemgate.claim('record_validation-1', '{"ticket": 1}',
       workflow => 'record_validation-wf') \gset
SELECT is(:'outcome'::text, 'recovered', 'the run is recovered by a new owner');
SELECT is((SELECT attempt FROM idemgate.record_validation('record_validation-1', :'owner2', :version2, '{"category": "billing"}', :schema)),
          4, 'the new owner continues the count');

-- A malformed schema is an error of the call, owner or not; nothing counted.
SELECT throws_ok(format('SELECT * FROM idemgate.record_validation(%L, %L, %s, %L, %L)',
                        'record_validation-1', :'owner2', :version2, '{}', '{"type": "object", "format": "email"}'),
                 '22023', 'unsupported JSON Schema keyword "format" in argument "schema" at $', 'a bad schema, live owner');
SELECT throws_ok(format('SELECT * FROM idemgate.record_validation(%L, %L, %s, %L, %L)',
                        'record_validation-1', gen_random_uuid(), 0, '{}', '{"minLength": -1}'),
                 '22023', NULL, 'a bad schema, stale owner');
SELECT is((SELECT validations FROM idemgate.runs WHERE idempotency_key = 'record_validation-1'), 4, 'not counted');

-- Every required argument: 22004 naming it; a bad key: 22023.
SELECT throws_ok(q, code, msg, a) FROM (VALUES
  ('key',     'SELECT * FROM idemgate.record_validation(NULL, gen_random_uuid(), 1, ''{}'', ''{}'')', '22004', 'argument "key" must not be NULL'),
  ('owner',   'SELECT * FROM idemgate.record_validation(''k'', NULL, 1, ''{}'', ''{}'')', '22004', 'argument "owner" must not be NULL'),
  ('version', 'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), NULL, ''{}'', ''{}'')', '22004', 'argument "version" must not be NULL'),
  ('output',  'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), 1, NULL, ''{}'')', '22004', 'argument "output" must not be NULL'),
  ('schema',  'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), 1, ''{}'', NULL)', '22004', 'argument "schema" must not be NULL'),
  ('empty key', 'SELECT * FROM idemgate.record_validation('''', gen_random_uuid(), 1, ''{}'', ''{}'')', '22023',
   'argument "key" must be between 1 and 512 bytes long, not 0'),
  ('long key', 'SELECT * FROM idemgate.record_validation(repeat(''k'', 513), gen_random_uuid(), 1, ''{}'', ''{}'')', '22023',
   'argument "key" must be between 1 and 512 bytes long, not 513')
) AS t(a, q, code, msg);

-- Privileges: the client bundle may call it, a reader may not.
CREATE ROLE record_validation_client;
CREATE ROLE record_validation_reader;
SELECT idemgate.grant_role('record_validation_client', 'client') \g /dev/null
SELECT idemgate.grant_role('record_validation_reader', 'reader') \g /dev/null
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'],
                          'record_validation_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'],
                          'record_validation_reader', ARRAY[]::text[]);
SELECT is(pg_temp.as_role('record_validation_client',
                          format($$SELECT attempt FROM idemgate.record_validation('record_validation-1', %L, %s, '{"category": "bug"}', %L)$$,
                                 :'owner2', :version2, :schema)),
          '5', 'a client records attempt 5');
SELECT throws_ok($$SELECT pg_temp.as_role('record_validation_reader',
                     $q$SELECT * FROM idemgate.record_validation('record_validation-1', gen_random_uuid(), 1, '{}', '{}')$q$)$$,
                 '42501', 'permission denied for function record_validation', 'a reader may not call it');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
SELECT idemgate.revoke_role('record_validation_client', 'client') \g /dev/null
SELECT idemgate.revoke_role('record_validation_reader', 'reader') \g /dev/null
DROP ROLE record_validation_client;
DROP ROLE record_validation_reader;
