-- Endpoint health (SPEC §22; src/policy/endpoint_circuits.c): the view
-- endpoint_health, the alert endpoint_down, reset_circuit (audited), the
-- settings' ranges, and the claim skipping an open circuit's effects. The
-- circuit here is opened by hand, its probe far in the future, so the
-- regression database's dispatcher leaves it alone; test/t/155 opens and
-- closes one with a real outage. pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

SELECT idemgate.register_endpoint('ec_crm', 'http://127.0.0.1:9/crm') \g /dev/null
SELECT idemgate.register_endpoint('ec_mail', 'http://127.0.0.1:9/mail') \g /dev/null

-- The contract's columns.
SELECT results_eq($$SELECT attname::text COLLATE "default", format_type(atttypid, atttypmod) FROM pg_attribute
                     WHERE attrelid = 'idemgate.endpoint_health'::regclass AND attnum > 0 ORDER BY attnum$$,
                  $$VALUES ('effect_type', 'text'), ('url', 'text'), ('state', 'text'),
                           ('opened_at', 'timestamp with time zone'), ('failures', 'integer'),
                           ('error_class', 'text'), ('last_status', 'integer'), ('probes', 'integer'),
                           ('next_probe_at', 'timestamp with time zone'), ('waiting', 'bigint'),
                           ('waiting_since', 'timestamp with time zone')$$,
                  'endpoint_health: the contract''s columns');
SELECT results_eq($$SELECT effect_type, state, waiting FROM idemgate.endpoint_health
                     WHERE effect_type LIKE 'ec\_%' ORDER BY 1$$,
                  $$VALUES ('ec_crm', 'closed', 0::bigint), ('ec_mail', 'closed', 0::bigint)$$,
                  'every endpoint starts closed');

-- Bad arguments: 22004 / 22023 naming the argument, IG003 for a type
-- without an endpoint; nothing written.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.reset_circuit(NULL, 'ops')$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.reset_circuit('ec_crm', NULL)$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.reset_circuit('ec_crm', '')$$, '22023', 'argument "actor" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.reset_circuit('ec_cmr', 'ops')$$, 'IG003', 'effect type "ec_cmr" has no endpoint')
) AS t(q, code, m);
SELECT is_empty($$SELECT * FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%'$$, 'nothing audited');

-- Reset of a closed circuit: false, still audited.
SELECT is(idemgate.reset_circuit('ec_mail', 'ana'), false, 'a closed circuit: false');
SELECT results_eq($$SELECT kind, actor, details - 'by' FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%'$$,
                  $$VALUES ('endpoint_circuit_reset', 'ana', '{"effect_type": "ec_mail", "was_open": false}'::jsonb)$$,
                  'the reset is audited');

-- Three effects of ec_crm waiting behind an open circuit (its probe in an hour).
SELECT idemgate.set_actions_enabled(false, 'tester', 'no sends while the circuit is built') \g /dev/null
CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', '{}'))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;
SELECT is((SELECT count(*) FROM pg_temp.mk('ec-1', 'ec_crm', 3)), 3::bigint, 'three ec_crm effects');
INSERT INTO idemgate.endpoint_circuits (effect_type, opened_at, failures, error_class, last_status, next_probe_at)
VALUES ('ec_crm', now() - interval '2 minutes', 5, 'unavailable', 503, now() + interval '1 hour');
SELECT results_eq($$SELECT effect_type, state, failures, error_class, last_status, probes, waiting,
                           waiting_since IS NOT NULL FROM idemgate.endpoint_health
                     WHERE effect_type LIKE 'ec\_%' ORDER BY 1$$,
                  $$VALUES ('ec_crm', 'open', 5, 'unavailable', 503, 0, 3::bigint, true),
                           ('ec_mail', 'closed', NULL, NULL, NULL, NULL, 0::bigint, false)$$,
                  'endpoint_health: ec_crm open, three effects wait');
SELECT results_eq($$SELECT alert, subject, severity, count,
                           message LIKE 'endpoint of type ec_crm is down (5 unavailable failures in a row, HTTP 503); 3 effects wait since %'
                      FROM idemgate.alert_instances WHERE alert = 'endpoint_down'$$,
                  $$VALUES ('endpoint_down', 'effect_type:ec_crm', 'critical', 3::bigint, true)$$,
                  'endpoint_down names the type, how many wait and since when');

-- The switch back on: the dispatcher's claim skips the open circuit's effects.
SELECT idemgate.set_actions_enabled(true, 'tester', 'circuit built') \g /dev/null
SELECT pg_sleep(1.5);
SELECT results_eq($$SELECT state, attempts FROM idemgate.outbox WHERE idempotency_key = 'ec-1'$$,
                  $$VALUES ('pending', 0), ('pending', 0), ('pending', 0)$$,
                  'held: pending, no attempt made');

-- Readers see every column but the URL.
CREATE ROLE ec_reader;
SELECT idemgate.grant_role('ec_reader', 'reader') \g /dev/null
SELECT is(pg_temp.as_role('ec_reader', $$SELECT string_agg(effect_type || ':' || state, ',' ORDER BY effect_type)
                                            FROM idemgate.endpoint_health WHERE effect_type LIKE 'ec\_%'$$),
          'ec_crm:open,ec_mail:closed', 'a reader reads the circuits');
SELECT throws_ok($$SELECT pg_temp.as_role('ec_reader', 'SELECT url FROM idemgate.endpoint_health')$$,
                 '42501', 'permission denied for view endpoint_health', 'but not the URLs');

-- reset_circuit is the operator's: closes it, audited, the alert clears.
SELECT idemgate.set_actions_enabled(false, 'tester', 'nothing sent to the closed port') \g /dev/null
SELECT throws_ok($$SELECT pg_temp.as_role('ec_reader', 'SELECT idemgate.reset_circuit(''ec_crm'', ''eve'')')$$,
                 '42501', 'permission denied for function reset_circuit', 'a reader cannot reset');
SELECT is(idemgate.reset_circuit('ec_crm', 'ana'), true, 'an open circuit: true');
SELECT results_eq($$SELECT kind, actor, details->>'effect_type', (details->>'probes')::int, details ? 'opened_at'
                      FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%' ORDER BY id$$,
                  $$VALUES ('endpoint_circuit_reset', 'ana', 'ec_mail', NULL::int, false),
                           ('endpoint_circuit_reset', 'ana', 'ec_crm', 0, true)$$,
                  'the reset is audited with when it opened');
SELECT is_empty($$SELECT * FROM idemgate.endpoint_circuits$$, 'no circuit left');
SELECT is_empty($$SELECT * FROM idemgate.alerts WHERE alert = 'endpoint_down'$$, 'endpoint_down cleared');

-- unregister_endpoint drops the circuit with the endpoint.
INSERT INTO idemgate.endpoint_circuits (effect_type, failures, error_class, next_probe_at)
VALUES ('ec_mail', 5, 'transport', now() + interval '1 hour');
SELECT is(idemgate.unregister_endpoint('ec_mail', 'ana'), true, 'ec_mail unregistered');
SELECT is_empty($$SELECT * FROM idemgate.endpoint_circuits$$, 'its circuit went with it');

-- Settings: circuit_failures 0..1000 (0: never open), circuit_max_hold
-- 1 minute .. 30 days; a refused value is not written (SQLSTATE only: 18
-- words the range of a setting with a unit differently).
\set VERBOSITY sqlstate
ALTER SYSTEM SET idemgate.circuit_failures = -1;
ALTER SYSTEM SET idemgate.circuit_failures = 1001;
ALTER SYSTEM SET idemgate.circuit_max_hold = '30s';
ALTER SYSTEM SET idemgate.circuit_max_hold = '31d';
\set VERBOSITY default
SELECT is((SELECT count(*) FROM pg_file_settings WHERE name LIKE 'idemgate.circuit%'), 0::bigint, 'nothing written');
SELECT results_eq($$SELECT name, setting, min_val, max_val, unit FROM pg_settings
                     WHERE name LIKE 'idemgate.circuit%' ORDER BY 1$$,
                  $$VALUES ('idemgate.circuit_failures', '5', '0', '1000', NULL),
                           ('idemgate.circuit_max_hold', '86400', '60', '2592000', 's')$$,
                  'defaults and ranges');

-- port 9 gets nothing more
SELECT idemgate.unregister_endpoint('ec_crm', 'ana') \g /dev/null
SELECT idemgate.set_actions_enabled(true, 'tester', 'done') \g /dev/null
SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
