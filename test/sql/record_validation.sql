-- record_validation: validate() as the run's live owner, counted per run
-- (attempt) and audited without the output itself.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- The contract's signature and result columns.
SELECT pg_catalog.pg_get_function_arguments('idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)'::regprocedure),
       pg_catalog.pg_get_function_result('idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)'::regprocedure);

-- A live run, and a schema of the shape the model must produce.
SELECT lease_owner AS owner, version FROM idemgate.claim('record_validation-1', '{"ticket": 1}',
       workflow => 'record_validation-wf') \gset
\set schema '''{"type": "object", "required": ["category"], "additionalProperties": false, "properties": {"category": {"enum": ["billing", "bug"]}, "reply": {"type": "string", "maxLength": 20}}}'''

-- Attempt 1: invalid (wrong enum value, reply too long, an extra field).
SELECT * FROM idemgate.record_validation('record_validation-1', :'owner', :version,
    '{"category": "SECRET-OUTPUT-1", "reply": "a reply that is far too long", "x": 1}', :schema);
-- Attempt 2: still invalid (missing required field).
SELECT valid, jsonb_array_length(errors) AS n, attempt FROM idemgate.record_validation('record_validation-1', :'owner', :version,
    '{"reply": "SECRET-OUTPUT-2"}', :schema);
-- Attempt 3: valid after bounded repair.
SELECT * FROM idemgate.record_validation('record_validation-1', :'owner', :version,
    '{"category": "bug", "reply": "SECRET-OUTPUT-3"}', :schema);

-- The counter and the audit trail: verdict, attempt and error count, in
-- order; never the output nor the error messages that quote it.
SELECT validations FROM idemgate.runs WHERE idempotency_key = 'record_validation-1';
SELECT kind, details FROM idemgate.events
 WHERE idempotency_key = 'record_validation-1' ORDER BY id;
SELECT count(*) AS events_quoting_output FROM idemgate.events
 WHERE details::text LIKE '%SECRET-OUTPUT%' OR details::text LIKE '%too long%';

-- Ownership lost: a row of NULLs, nothing counted, no event.
SELECT * FROM idemgate.record_validation('record_validation-1', :'owner', :version + 1, '{"category": "bug"}', :schema);
SELECT * FROM idemgate.record_validation('record_validation-1', gen_random_uuid(), :version, '{"category": "bug"}', :schema);
SELECT * FROM idemgate.record_validation('record_validation-nokey', :'owner', :version, '{"category": "bug"}', :schema);
UPDATE idemgate.runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'record_validation-1';
SELECT * FROM idemgate.record_validation('record_validation-1', :'owner', :version, '{"category": "bug"}', :schema);
SELECT validations, (SELECT count(*) FROM idemgate.events e WHERE e.idempotency_key = 'record_validation-1'
                      AND e.kind = 'validation_recorded') AS events
  FROM idemgate.runs WHERE idempotency_key = 'record_validation-1';

-- A new owner (recovered after the lease expired) continues the count.
SELECT outcome, lease_owner AS owner2, version AS version2 FROM idemgate.claim('record_validation-1', '{"ticket": 1}',
       workflow => 'record_validation-wf') \gset
SELECT :'outcome' AS outcome, attempt FROM idemgate.record_validation('record_validation-1', :'owner2', :version2, '{"category": "billing"}', :schema);

-- A malformed schema is an error of the call, owner or not; nothing counted.
SELECT pg_temp.sqlstate_of(format('SELECT * FROM idemgate.record_validation(%L, %L, %s, %L, %L)',
       'record_validation-1', :'owner2', :version2, '{}', '{"type": "object", "format": "email"}'));
SELECT pg_temp.sqlstate_of(format('SELECT * FROM idemgate.record_validation(%L, %L, %s, %L, %L)',
       'record_validation-1', gen_random_uuid(), 0, '{}', '{"minLength": -1}')) LIKE '22023:%' AS stale_owner_bad_schema_22023;
SELECT validations FROM idemgate.runs WHERE idempotency_key = 'record_validation-1';

-- Every required argument: 22004 naming it; a bad key: 22023.
SELECT a, pg_temp.sqlstate_of(q) FROM (VALUES
  ('key',     'SELECT * FROM idemgate.record_validation(NULL, gen_random_uuid(), 1, ''{}'', ''{}'')'),
  ('owner',   'SELECT * FROM idemgate.record_validation(''k'', NULL, 1, ''{}'', ''{}'')'),
  ('version', 'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), NULL, ''{}'', ''{}'')'),
  ('output',  'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), 1, NULL, ''{}'')'),
  ('schema',  'SELECT * FROM idemgate.record_validation(''k'', gen_random_uuid(), 1, ''{}'', NULL)'),
  ('empty key', 'SELECT * FROM idemgate.record_validation('''', gen_random_uuid(), 1, ''{}'', ''{}'')'),
  ('long key', 'SELECT * FROM idemgate.record_validation(repeat(''k'', 513), gen_random_uuid(), 1, ''{}'', ''{}'')')
) AS t(a, q);

-- Privileges: the client bundle may call it, a reader may not.
CREATE ROLE record_validation_client;
CREATE ROLE record_validation_reader;
SELECT idemgate.grant_role('record_validation_client', 'client');
SELECT idemgate.grant_role('record_validation_reader', 'reader');
SELECT r, has_function_privilege(r, 'idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)', 'EXECUTE')
  FROM (VALUES ('record_validation_client'), ('record_validation_reader')) AS t(r);
SET ROLE record_validation_client;
SELECT attempt FROM idemgate.record_validation('record_validation-1', :'owner2', :version2, '{"category": "bug"}', :schema);
SET ROLE record_validation_reader;
SELECT pg_temp.sqlstate_of('SELECT * FROM idemgate.record_validation(''record_validation-1'', gen_random_uuid(), 1, ''{}'', ''{}'')');
RESET ROLE;
SELECT idemgate.revoke_role('record_validation_client', 'client');
SELECT idemgate.revoke_role('record_validation_reader', 'reader');
DROP ROLE record_validation_client;
DROP ROLE record_validation_reader;
