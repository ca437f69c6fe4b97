-- contract: the SQL contract of SPEC.md checked as callers use it (named
-- notation), section by section: signatures and result columns, the rows of
-- NULLs, SQLSTATEs, bundles, and what pg_dump needs to restore a database.
-- pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- Every function the SPEC names, with its exact arguments, defaults and result.
SELECT results_eq($$SELECT p.proname::text COLLATE "default", pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)
                      FROM pg_proc p
                     WHERE p.pronamespace = 'idemgate'::regnamespace
                       AND p.proname IN ('claim', 'claim_lease', 'hash_payload', 'cas_transition', 'renew_lease', 'fail',
                                         'supersede', 'validate', 'record_validation', 'request_approval', 'hash_token',
                                         'peek_approval', 'consume_approval', 'expire_approvals', 'enqueue_effect',
                                         'claim_effects', 'complete_effect', 'fail_effect', 'register_endpoint', 'reinject',
                                         'reinject_all', 'resolve_effect', 'metrics', 'prometheus', 'watch_workflow',
                                         'set_actions_enabled', 'actions_enabled', 'purge', 'grant_role', 'revoke_role')
                     ORDER BY 1, 2$$,
                  $$VALUES ('actions_enabled', '', 'boolean'),
                           ('cas_transition', 'key text, owner uuid, version bigint, new_state text, result jsonb DEFAULT NULL::jsonb', 'bigint'),
                           ('cas_transition', 'request jsonb', 'bigint'),
                           ('claim', 'key text, payload jsonb, lease interval DEFAULT ''@ 5 mins''::interval, workflow text DEFAULT NULL::text, owner uuid DEFAULT NULL::uuid, origin text DEFAULT NULL::text', 'TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)'),
                           ('claim', 'request jsonb', 'TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)'),
                           ('claim_effects', 'effect_type text, batch integer DEFAULT 10, lease interval DEFAULT ''@ 1 min''::interval', 'TABLE(effect_id uuid, idempotency_key text, effect_type text, target text, payload jsonb, attempt integer, lease_owner uuid)'),
                           ('claim_effects', 'request jsonb', 'TABLE(effect_id uuid, idempotency_key text, effect_type text, target text, payload jsonb, attempt integer, lease_owner uuid)'),
                           ('claim_lease', 'key text, payload_hash bytea, owner uuid, lease interval', 'TABLE(idempotency_key text, lease_owner uuid, version bigint)'),
                           ('complete_effect', 'effect_id uuid, owner uuid, provider_id text DEFAULT NULL::text, status integer DEFAULT NULL::integer', 'boolean'),
                           ('complete_effect', 'request jsonb', 'boolean'),
                           ('consume_approval', 'request jsonb', 'TABLE(outcome text, idempotency_key text, effect_ids uuid[])'),
                           ('consume_approval', 'token text, decision text, approver text, reason text DEFAULT NULL::text', 'TABLE(outcome text, idempotency_key text, effect_ids uuid[])'),
                           ('enqueue_effect', 'key text, owner uuid, version bigint, effects jsonb', 'TABLE(effect_ids uuid[], version bigint, review_requested jsonb)'),
                           ('enqueue_effect', 'request jsonb', 'TABLE(effect_ids uuid[], version bigint, review_requested jsonb)'),
                           ('expire_approvals', '', 'integer'),
                           ('fail', 'key text, owner uuid, version bigint, error_class text, error text, retryable boolean', 'text'),
                           ('fail', 'request jsonb', 'text'),
                           ('fail_effect', 'effect_id uuid, owner uuid, error_class text, error text DEFAULT NULL::text, retry_after interval DEFAULT NULL::interval, status integer DEFAULT NULL::integer', 'text'),
                           ('fail_effect', 'request jsonb', 'text'),
                           ('grant_role', 'role regrole, bundle text', 'void'),
                           ('hash_payload', 'payload jsonb', 'bytea'),
                           ('hash_token', 'token text', 'bytea'),
                           ('metrics', 'since timestamp with time zone DEFAULT (now() - ''@ 7 days''::interval)', 'TABLE(claims bigint, duplicates bigint, duplicate_rate double precision, recovered bigint, approvals_decided bigint, approval_wait_p50 interval, approval_wait_p95 interval, validations bigint, validation_failure_rate double precision, auto_approved bigint, human_approved bigint, retries bigint, retry_exhausted bigint, unknown_effects bigint, dead_letters_open bigint, oldest_dead_letter_age interval, actions_enabled boolean)'),
                           ('peek_approval', 'request jsonb', 'TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[], expires_at timestamp with time zone, card jsonb, effects jsonb)'),
                           ('peek_approval', 'token text', 'TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[], expires_at timestamp with time zone, card jsonb, effects jsonb)'),
                           ('prometheus', '', 'text'),
                           ('purge', 'older_than interval', 'bigint'),
                           ('record_validation', 'key text, owner uuid, version bigint, output jsonb, schema jsonb', 'TABLE(valid boolean, errors jsonb, attempt integer)'),
                           ('record_validation', 'request jsonb', 'TABLE(valid boolean, errors jsonb, attempt integer)'),
                           ('register_endpoint', 'effect_type text, url text, timeout interval DEFAULT ''@ 10 secs''::interval, max_attempts integer DEFAULT 3, honors_idempotency_key boolean DEFAULT false, headers jsonb DEFAULT ''{}''::jsonb, provider_id_field text DEFAULT ''id''::text, rate_limit double precision DEFAULT NULL::double precision, max_in_flight integer DEFAULT NULL::integer, status_url text DEFAULT NULL::text', 'void'),
                           ('reinject', 'id bigint, actor text, payload jsonb DEFAULT NULL::jsonb', 'boolean'),
                           ('reinject_all', 'actor text, effect_type text DEFAULT NULL::text, since timestamp with time zone DEFAULT NULL::timestamp with time zone', 'integer'),
                           ('renew_lease', 'key text, owner uuid, version bigint, extend_by interval', 'timestamp with time zone'),
                           ('renew_lease', 'request jsonb', 'timestamp with time zone'),
                           ('request_approval', 'key text, owner uuid, version bigint, effects jsonb, expires_in interval DEFAULT ''@ 24 hours''::interval, card jsonb DEFAULT NULL::jsonb, audience text[] DEFAULT NULL::text[], requested_by text DEFAULT NULL::text', 'TABLE(approval_id uuid, token text, expires_at timestamp with time zone, version bigint)'),
                           ('request_approval', 'request jsonb', 'TABLE(approval_id uuid, token text, expires_at timestamp with time zone, version bigint)'),
                           ('resolve_effect', 'effect_id uuid, delivered boolean, actor text, provider_id text DEFAULT NULL::text, note text DEFAULT NULL::text', 'text'),
                           ('revoke_role', 'role regrole, bundle text', 'void'),
                           ('set_actions_enabled', 'enabled boolean, actor text, reason text', 'void'),
                           ('supersede', 'original_key text, new_key text, payload jsonb, operator text, reason text, lease interval DEFAULT ''@ 5 mins''::interval', 'TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)'),
                           ('validate', 'output jsonb, schema jsonb', 'TABLE(valid boolean, errors jsonb)'),
                           ('watch_workflow', 'name text, expected_interval interval', 'void')$$,
                  'every function the SPEC names: arguments, defaults, result');
-- Contract columns of the tables and views.
SELECT is((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_attribute a WHERE a.attrelid = ('idemgate.' || rel)::regclass AND a.attnum > 0 AND NOT a.attisdropped),
          cols, rel || ': exactly these columns in this order') FROM (VALUES
  ('alerts', 'alert text, severity text, message text, count bigint, since timestamp with time zone'),
  ('events', 'id bigint, at timestamp with time zone, idempotency_key text, effect_id uuid, kind text, actor text, details jsonb')
) AS t(rel, cols);
SELECT col_type_is('idemgate', rel, col, type, rel || '.' || col || ' is ' || type) FROM (VALUES
  ('approvals', 'approval_id', 'uuid'),
  ('approvals', 'idempotency_key', 'text'),
  ('approvals', 'token_hash', 'bytea'),
  ('approvals', 'allowed_decisions', 'text[]'),
  ('approvals', 'audience', 'text[]'),
  ('approvals', 'requested_by', 'text'),
  ('approvals', 'expires_at', 'timestamp with time zone'),
  ('approvals', 'consumed_at', 'timestamp with time zone'),
  ('approvals', 'decision', 'text'),
  ('approvals', 'approver_subject', 'text'),
  ('approvals', 'card', 'jsonb'),
  ('approvals', 'effects', 'jsonb'),
  ('approvals', 'created_at', 'timestamp with time zone'),
  ('dead_letters', 'id', 'bigint'),
  ('dead_letters', 'kind', 'text'),
  ('dead_letters', 'idempotency_key', 'text'),
  ('dead_letters', 'effect_id', 'uuid'),
  ('dead_letters', 'payload', 'jsonb'),
  ('dead_letters', 'error_class', 'text'),
  ('dead_letters', 'error', 'text'),
  ('dead_letters', 'attempts', 'integer'),
  ('dead_letters', 'dead_at', 'timestamp with time zone'),
  ('dead_letters', 'reinjected_at', 'timestamp with time zone'),
  ('dead_letters', 'reinjected_by', 'text'),
  ('outbox', 'effect_id', 'uuid'),
  ('outbox', 'idempotency_key', 'text'),
  ('outbox', 'effect_type', 'text'),
  ('outbox', 'target', 'text'),
  ('outbox', 'payload', 'jsonb'),
  ('outbox', 'state', 'text'),
  ('outbox', 'attempts', 'integer'),
  ('outbox', 'next_attempt_at', 'timestamp with time zone'),
  ('outbox', 'lease_owner', 'uuid'),
  ('outbox', 'lease_expires_at', 'timestamp with time zone'),
  ('outbox', 'provider_id', 'text'),
  ('outbox', 'last_status', 'integer'),
  ('outbox', 'last_error', 'text'),
  ('outbox', 'created_at', 'timestamp with time zone'),
  ('outbox', 'updated_at', 'timestamp with time zone'),
  ('runs', 'idempotency_key', 'text'),
  ('runs', 'workflow', 'text'),
  ('runs', 'state', 'text'),
  ('runs', 'payload_hash', 'bytea'),
  ('runs', 'payload', 'jsonb'),
  ('runs', 'lease_owner', 'uuid'),
  ('runs', 'lease_expires_at', 'timestamp with time zone'),
  ('runs', 'version', 'bigint'),
  ('runs', 'result', 'jsonb'),
  ('runs', 'replaces_key', 'text'),
  ('runs', 'created_at', 'timestamp with time zone'),
  ('runs', 'updated_at', 'timestamp with time zone')
) AS t(rel, col, type);

-- pg_dump: the identity sequences of events and dead_letters are dumped with
-- the rows (or a restored database reuses ids and every event insert fails),
-- and so is the record of granted bundles; bundle_members, filled by CREATE
-- EXTENSION itself, is not (no duplicate rows).
SELECT results_eq($$SELECT c::regclass::text FROM pg_extension e, unnest(e.extconfig) AS c
                     WHERE e.extname = 'idemgate' ORDER BY c::regclass::text$$,
                  $$VALUES ('idemgate.alert_state'), ('idemgate.approvals'), ('idemgate.control'), ('idemgate.dead_letters'), ('idemgate.dead_letters_id_seq'), ('idemgate.effect_type_grants'), ('idemgate.effect_type_policies'), ('idemgate.effect_type_rollup'), ('idemgate.endpoints'), ('idemgate.events'), ('idemgate.events_id_seq'), ('idemgate.granted_bundles'), ('idemgate.installation_secret'), ('idemgate.metrics_rollup'), ('idemgate.outbox'), ('idemgate.paused_effect_types'), ('idemgate.run_metrics_rollup'), ('idemgate.runs'), ('idemgate.tombstones'), ('idemgate.watched_workflows')$$, 'the tables and sequences pg_dump dumps');
-- The kill switch row is dumped too; restoring it (COPY of the dumped row)
-- updates the row CREATE EXTENSION made: one row, the restored state.
INSERT INTO idemgate.control (singleton, actions_enabled, changed_at, changed_by, reason)
VALUES (true, false, '2026-01-02 03:04:05+00', 'contract', 'restored');
SELECT results_eq($$SELECT count(*), bool_and(actions_enabled), min(changed_by), min(reason), min(changed_at) = '2026-01-02 03:04:05+00'
                      FROM idemgate.control$$,
                  $$VALUES (1::bigint, false, 'contract', 'restored', true)$$, 'a restored control row: one row, the restored state');
SELECT is(idemgate.actions_enabled(), false, 'actions_enabled follows the restored row');
SELECT idemgate.set_actions_enabled(enabled => true, actor => 'qa', reason => 'contract') \g /dev/null

-- pg_upgrade refuses user columns of reg* types other than regclass, regrole
-- and regtype (the oids they store change), so no idemgate table has one.
SELECT is_empty($$SELECT c.relname, a.attname, t.typname
                   FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                   JOIN pg_type t ON t.oid = a.atttypid
                   WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'p', 'm')
                     AND ltrim(t.typname, '_') LIKE 'reg%' AND ltrim(t.typname, '_') NOT IN ('regclass', 'regrole', 'regtype')$$,
                'no column blocks pg_upgrade');
-- bundle_members.fn is therefore text: always the qualified regprocedure
-- output, and only of an existing function. Names are resolved with
-- search_path = pg_catalog, pg_temp whatever the inserter's search_path, so
-- an unqualified name is unknown (42883).
SELECT results_eq($$SELECT count(*) FILTER (WHERE fn <> fn::regprocedure::text), count(*) FILTER (WHERE fn NOT LIKE 'idemgate.%')
                      FROM idemgate.bundle_members WHERE fn IS NOT NULL$$,
                  $$VALUES (0::bigint, 0::bigint)$$, 'bundle_members.fn: canonical and qualified');
BEGIN;
SET LOCAL search_path = idemgate, tap, public;
SELECT results_eq($$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'IDEMGATE.Metrics( timestamptz )') RETURNING fn$$,
                  $$VALUES ('idemgate.metrics(timestamp with time zone)')$$, 'a name is stored canonical');
ROLLBACK;
SET search_path = idemgate, tap, public;
SELECT throws_ok($$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'metrics(timestamptz)')$$,
                 '42883', 'function "metrics(timestamptz)" does not exist', 'an unqualified name is unknown');
SELECT throws_ok($$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'idemgate.no_such_function()')$$,
                 '42883', 'function "idemgate.no_such_function()" does not exist', 'an unknown function');
SET search_path = tap, public;

-- §1 claim: new, duplicate (lease_owner NULL), IG001 on another payload.
SELECT results_eq($$SELECT outcome, idempotency_key, state, lease_owner IS NOT NULL, version, result
                      FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}', lease => '1 minute', workflow => 'qa')$$,
                  $$VALUES ('claimed', 'contract-c1', 'processing', true, 0::bigint, NULL::jsonb)$$, 'claim: claimed');
SELECT results_eq($$SELECT outcome, idempotency_key, state, lease_owner, version, result
                      FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}')$$,
                  $$VALUES ('duplicate', 'contract-c1', 'processing', NULL::uuid, 0::bigint, NULL::jsonb)$$, 'claim: duplicate, no owner');
SELECT throws_ok(q, code, m, what) FROM (VALUES
  ('another payload', $$SELECT * FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 2}')$$, 'IG001',
   'idempotency key "contract-c1" was already used with a different payload'),
  ('a NULL key', $$SELECT * FROM idemgate.claim(key => NULL, payload => '{}')$$, '22004', 'argument "key" must not be NULL'),
  ('an empty key', $$SELECT * FROM idemgate.claim(key => '', payload => '{}')$$, '22023',
   'argument "key" must be between 1 and 512 bytes long, not 0')
) AS t(what, q, code, m);
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim(request => '{"key": "contract-c1", "payload": {"a": 1}}')$$,
                  $$VALUES ('duplicate', 'processing')$$, 'claim(request): duplicate');
SELECT throws_ok($$SELECT * FROM idemgate.claim(request => '{"payload": {}}')$$, '22004', 'field "key" of argument "request" must not be missing or null', 'a request without a key');
-- claim_lease never raises for a busy or finished key or another payload.
SELECT is_empty($$SELECT * FROM idemgate.claim_lease(key => 'contract-c1',
                   payload_hash => idemgate.hash_payload(payload => '{"a": 1}'), owner => gen_random_uuid(), lease => '1 minute')$$,
                'claim_lease of a busy key: no row');
SELECT is_empty($$SELECT * FROM idemgate.claim_lease(key => 'contract-c1',
                   payload_hash => idemgate.hash_payload(payload => '{"a": 9}'), owner => gen_random_uuid(), lease => '1 minute')$$,
                'claim_lease with another hash: no row');
SELECT is(idemgate.hash_payload(payload => '{"b": 1, "a": 2}'), sha256(convert_to('{"a": 2, "b": 1}', 'UTF8')), 'hash_payload');
-- ownership lost: NULL from cas_transition, renew_lease, fail; rows of NULLs
-- from request_approval and enqueue_effect.
SELECT results_eq($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => gen_random_uuid(), version => 0, new_state => 'completed'),
                           idemgate.renew_lease(key => 'contract-c1', owner => gen_random_uuid(), version => 0, extend_by => '1 minute'),
                           idemgate.fail(key => 'contract-c1', owner => gen_random_uuid(), version => 0, error_class => 'x', error => 'y', retryable => true)$$,
                  $$VALUES (NULL::bigint, NULL::timestamptz, NULL::text)$$, 'a stranger: NULL from cas_transition, renew_lease, fail');
SELECT results_eq($$SELECT * FROM idemgate.request_approval(key => 'contract-c1', owner => gen_random_uuid(), version => 0,
                      effects => '{"type": "contract_t", "target": "a", "payload": {}}')$$,
                  $$VALUES (NULL::uuid, NULL::text, NULL::timestamptz, NULL::bigint)$$, 'a stranger: request_approval gives a row of NULLs');
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect(key => 'contract-c1', owner => gen_random_uuid(), version => 0,
                      effects => '{"type": "contract_t", "target": "a", "payload": {}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a stranger: enqueue_effect gives a row of NULLs');
SELECT lease_owner AS o FROM idemgate.runs WHERE idempotency_key = 'contract-c1' \gset
SELECT throws_ok(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 0, new_state => 'nope')$$, :'o'),
                 '22023', 'argument "new_state" must be a run state, not "nope"', 'an unknown state');
SELECT throws_ok(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 0, new_state => 'approved')$$, :'o'),
                 'IG002', 'illegal transition of run "contract-c1" from processing to approved', 'processing to approved is not a transition');
SELECT is(idemgate.cas_transition(key => 'contract-c1', owner => :'o', version => 0, new_state => 'completed', result => '{"r": 1}'),
          1::bigint, 'completed: version 1');
SELECT results_eq($$SELECT outcome, state, lease_owner, result FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}')$$,
                  $$VALUES ('duplicate', 'completed', NULL::uuid, '{"r": 1}'::jsonb)$$, 'a duplicate sees the result');
SELECT throws_ok(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 1, new_state => 'processing')$$, :'o'),
                 'IG002', 'illegal transition of run "contract-c1" from completed to processing', 'nothing leaves completed');
-- supersede: only of a terminal original; same row as claim.
SELECT results_eq($$SELECT outcome, idempotency_key, state, version
                      FROM idemgate.supersede(original_key => 'contract-c1', new_key => 'contract-c1b', payload => '{"a": 1}',
                                              operator => 'qa', reason => 'replay')$$,
                  $$VALUES ('claimed', 'contract-c1b', 'processing', 0::bigint)$$, 'supersede: a claimed row');
SELECT is((SELECT replaces_key FROM idemgate.runs WHERE idempotency_key = 'contract-c1b'), 'contract-c1', 'replaces_key');
SELECT throws_ok($$SELECT * FROM idemgate.supersede(original_key => 'contract-c1b', new_key => 'contract-c1c',
                   payload => '{}', operator => 'qa', reason => 'r')$$, 'IG002', 'run "contract-c1b" is processing; only completed or failed_terminal runs can be superseded',
                 'supersede of a run that is not terminal');

-- §3 approvals: the token once (43 base64url chars), peek, exactly one row
-- from consume_approval that hides why it is invalid.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-a1', payload => '{}') \gset
SELECT token, length(token) AS token_length, token ~ '^[A-Za-z0-9_-]{43}$' AS base64url, version AS av
FROM idemgate.request_approval(key => 'contract-a1', owner => :'o', version => :v,
  effects => '[{"type": "contract_t", "target": "a", "payload": {"n": 1}}, {"type": "contract_t", "target": "b", "payload": {}}]',
  expires_in => '1 hour', card => '{"title": "t"}', audience => '{ana,bea}', requested_by => 'rui') \gset
SELECT results_eq(format('SELECT %s, %L::boolean, %s::bigint', :token_length, :'base64url', :av),
                  $$VALUES (43, true, 1::bigint)$$, 'the token: 43 base64url characters; version 1');
SELECT results_eq(format($$SELECT (SELECT token_hash FROM idemgate.approvals WHERE idempotency_key = 'contract-a1') = idemgate.hash_token(token => %L),
                                  (SELECT token_hash FROM idemgate.approvals WHERE idempotency_key = 'contract-a1') = sha256(convert_to(%L, 'UTF8'))$$,
                         :'token', :'token'),
                  $$VALUES (true, true)$$, 'the stored hash is hash_token, SHA-256');
SELECT results_eq(format($$SELECT idempotency_key, status, allowed_decisions, card ->> 'title', jsonb_array_length(effects)
                             FROM idemgate.peek_approval(token => %L)$$, :'token'),
                  $$VALUES ('contract-a1', 'pending', '{approve,reject}'::text[], 't', 2)$$, 'peek');
SELECT is_empty($$SELECT * FROM idemgate.peek_approval(token => 'contract-nothing')$$, 'peek of an unknown token: no row');
CREATE TEMP VIEW invalid AS SELECT 'invalid'::text AS outcome, NULL::text AS idempotency_key, NULL::uuid[] AS effect_ids;
SELECT results_eq(format('SELECT * FROM idemgate.consume_approval(token => %L, decision => %L, approver => %L)', tok, d, a),
                  'SELECT * FROM invalid', what) FROM (VALUES
  ('the requester: invalid', :'token', 'approve', 'rui'),
  ('outside the audience: invalid', :'token', 'approve', 'eva'),
  ('an unknown decision: invalid', :'token', 'maybe', 'ana'),
  ('an unknown token: invalid', 'contract-nothing', 'approve', 'ana')
) AS t(what, tok, d, a);
SELECT results_eq(format($$SELECT outcome, idempotency_key, cardinality(effect_ids)
                             FROM idemgate.consume_approval(token => %L, decision => 'approve', approver => 'ana')$$, :'token'),
                  $$VALUES ('approved', 'contract-a1', 2)$$, 'ana approves: two effects');
SELECT results_eq(format($$SELECT * FROM idemgate.consume_approval(token => %L, decision => 'approve', approver => 'bea')$$, :'token'),
                  'SELECT * FROM invalid', 'a used token: invalid');
SELECT is((SELECT status FROM idemgate.peek_approval(token => :'token')), 'consumed', 'peek: consumed');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'contract-a1'), 'approved', 'the run is approved');
SELECT results_eq($$SELECT target, state, attempts FROM idemgate.outbox WHERE idempotency_key = 'contract-a1' ORDER BY target$$,
                  $$VALUES ('a', 'pending', 0), ('b', 'pending', 0)$$, 'both effects pending');
-- a rejection: failed_terminal, nothing enqueued, no dead letter.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-a2', payload => '{}') \gset
SELECT token FROM idemgate.request_approval(key => 'contract-a2', owner => :'o', version => :v,
  effects => '{"type": "contract_t", "target": "a", "payload": {}}') \gset
SELECT results_eq(format($$SELECT outcome, idempotency_key FROM idemgate.consume_approval(token => %L, decision => 'reject', approver => 'ana')$$,
                         :'token'),
                  $$VALUES ('rejected', 'contract-a2')$$, 'ana rejects');
SELECT results_eq($$SELECT state, (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key),
                           (SELECT count(*) FROM idemgate.dead_letters d WHERE d.idempotency_key = r.idempotency_key)
                      FROM idemgate.runs r WHERE idempotency_key = 'contract-a2'$$,
                  $$VALUES ('failed_terminal', 0::bigint, 0::bigint)$$, 'rejected: failed_terminal, no effect, no dead letter');

-- §4/§5 enqueue_effect: one row per (key, type, target); claim_effects holds
-- everything while the kill switch is off and lets it go after.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-e1', payload => '{}') \gset
SELECT cardinality(effect_ids) AS effects, version AS v2 FROM idemgate.enqueue_effect(key => 'contract-e1', owner => :'o', version => :v,
  effects => '{"type": "contract_e", "target": "x", "payload": {"p": 1}}') \gset
SELECT is(:effects, 1, 'one effect enqueued');
SELECT is(:v2::bigint, :v::bigint + 1, 'the version is bumped');
SELECT results_eq(format($$SELECT * FROM idemgate.enqueue_effect(key => 'contract-e1', owner => %L, version => %s,
                             effects => '{"type": "contract_e", "target": "x", "payload": {"p": 1}}')$$, :'o', :v),
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a stale version: a row of NULLs');
SELECT results_eq($$SELECT count(*), (SELECT state FROM idemgate.runs WHERE idempotency_key = 'contract-e1')
                      FROM idemgate.outbox WHERE idempotency_key = 'contract-e1'$$,
                  $$VALUES (1::bigint, 'approved')$$, 'one row for the key, the run approved');
SELECT idemgate.set_actions_enabled(enabled => false, actor => 'qa', reason => 'contract') \g /dev/null
SELECT is(idemgate.actions_enabled(), false, 'the kill switch is off');
SELECT is_empty($$SELECT * FROM idemgate.claim_effects(effect_type => 'contract_e', batch => 10, lease => '1 minute')$$,
                'nothing is claimed while it is off');
SELECT idemgate.set_actions_enabled(enabled => true, actor => 'qa', reason => 'contract') \g /dev/null
SELECT effect_id AS e, lease_owner AS eo, attempt, target, payload
FROM idemgate.claim_effects(effect_type => 'contract_e', batch => 10, lease => '1 minute') \gset
SELECT results_eq(format('SELECT %s, %L, %L::jsonb', :attempt, :'target', :'payload'),
                  $$VALUES (1, 'x', '{"p": 1}'::jsonb)$$, 'claimed after: attempt 1');
-- backoff of the first retry: 1 s × (1 + U[0, 0.5)).
SELECT is(idemgate.fail_effect(effect_id => :'e', owner => :'eo', error_class => 'transport', error => 'refused'), 'pending',
          'transport: pending');
SELECT results_eq(format($$SELECT state, attempts, next_attempt_at - updated_at BETWEEN interval '1 s' AND interval '1.51 s'
                             FROM idemgate.outbox WHERE effect_id = %L$$, :'e'),
                  $$VALUES ('pending', 1, true)$$, 'backoff of the first retry');
SELECT throws_ok(format($$SELECT idemgate.fail_effect(effect_id => %L, owner => %L, error_class => 'bogus')$$, :'e', :'eo'),
                 '22023', 'argument "error_class" must be a known error class, not "bogus"', 'an unknown error class');
SELECT is(idemgate.complete_effect(effect_id => :'e', owner => :'eo', provider_id => 'late'), false, 'the lease is lost');
-- server_error → unknown, never claimed again; resolve_effect settles it.
UPDATE idemgate.outbox SET next_attempt_at = now() WHERE effect_id = :'e';
SELECT effect_id AS e, lease_owner AS eo, attempt FROM idemgate.claim_effects(effect_type => 'contract_e') \gset
SELECT is(:attempt, 2, 'attempt 2');
SELECT is(idemgate.fail_effect(effect_id => :'e', owner => :'eo', error_class => 'server_error', error => '500'), 'unknown',
          'server_error: unknown');
SELECT is_empty($$SELECT * FROM idemgate.claim_effects(effect_type => 'contract_e')$$, 'unknown is never claimed again');
SELECT is(idemgate.resolve_effect(effect_id => :'e', delivered => true, actor => 'qa', provider_id => 'prov-1', note => 'checked'),
          'completed', 'resolve_effect: completed');
SELECT results_eq(format($$SELECT o.state, o.provider_id, r.state
                             FROM idemgate.outbox o JOIN idemgate.runs r USING (idempotency_key) WHERE o.effect_id = %L$$, :'e'),
                  $$VALUES ('completed', 'prov-1', 'completed')$$, 'the effect and the run completed');
SELECT throws_ok($$SELECT idemgate.resolve_effect(effect_id => '00000000-0000-4000-8000-00000000c0de', delivered => true, actor => 'qa')$$,
                 'IG003', 'effect 00000000-0000-4000-8000-00000000c0de does not exist', 'resolve_effect of an unknown effect');

-- §7 a run dead letter is reinjected at most once; the run recovers.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-d1', payload => '{"d": 1}') \gset
SELECT is(idemgate.fail(key => 'contract-d1', owner => :'o', version => :v, error_class => 'model', error => 'bad', retryable => false),
          'failed_terminal', 'a terminal failure');
SELECT results_eq($$SELECT kind, effect_id, payload, error_class, error FROM idemgate.dead_letters WHERE idempotency_key = 'contract-d1'$$,
                  $$VALUES ('run', NULL::uuid, '{"d": 1}'::jsonb, 'model', 'bad')$$, 'a run dead letter');
SELECT id AS dl FROM idemgate.dead_letters WHERE idempotency_key = 'contract-d1' \gset
SELECT results_eq(format('SELECT idemgate.reinject(id => %s, actor => %L), idemgate.reinject(id => %s, actor => %L)', :dl, 'qa', :dl, 'qa'),
                  $$VALUES (true, false)$$, 'reinjected at most once');
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim(key => 'contract-d1', payload => '{"d": 1}')$$,
                  $$VALUES ('recovered', 'processing')$$, 'the run recovers');
SELECT throws_ok('SELECT idemgate.reinject(id => -1, actor => ''qa'')', 'IG003', 'dead letter -1 does not exist', 'an unknown dead letter');

-- §8 metrics: exactly one row with these columns and types.
SELECT is((SELECT count(*) FROM idemgate.metrics(since => now() - interval '1 hour')), 1::bigint, 'metrics: one row');
SELECT is_empty($$SELECT l FROM regexp_split_to_table(idemgate.prometheus(), E'\n') l
                   WHERE l <> '' AND l !~ '^# (HELP|TYPE) idemgate_[a-z0-9_]+ .+$'
                     AND l !~ '^idemgate_[a-z0-9_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$'$$,
                'every prometheus line is a comment or a sample');
SELECT is(right(idemgate.prometheus(), 1), E'\n', 'prometheus ends with a newline');

-- §11 bundles: exactly the SPEC's rights.
CREATE ROLE contract_client;
CREATE ROLE contract_reader;
CREATE ROLE contract_approver;
CREATE ROLE contract_operator;
SELECT idemgate.grant_role(role => 'contract_client', bundle => 'client'), idemgate.grant_role(role => 'contract_reader', bundle => 'reader'),
       idemgate.grant_role(role => 'contract_approver', bundle => 'approver'),
       idemgate.grant_role(role => 'contract_operator', bundle => 'operator') \g /dev/null
-- The functions the SPEC names, per role (every overload).
SELECT is((SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'idemgate'::regnamespace
             AND p.proname IN ('claim', 'claim_lease', 'hash_payload', 'cas_transition', 'renew_lease', 'fail',
                               'validate', 'record_validation', 'request_approval', 'enqueue_effect', 'claim_effects',
                               'complete_effect', 'fail_effect', 'peek_approval', 'consume_approval', 'metrics',
                               'prometheus', 'reinject', 'resolve_effect', 'supersede', 'set_actions_enabled',
                               'register_endpoint', 'watch_workflow', 'purge', 'grant_role', 'expire_approvals')),
          38::bigint, 'the named functions have 38 overloads');
SELECT function_privs_are('idemgate', f, a, r, CASE WHEN may THEN ARRAY['EXECUTE'] ELSE ARRAY[]::text[] END,
                          r || (CASE WHEN may THEN ' may' ELSE ' may not' END) || ' execute ' || f || '(' || array_to_string(a, ',') || ')')
FROM (VALUES
  ('contract_approver', 'cas_transition', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb']::text[], false),
  ('contract_approver', 'claim', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text']::text[], false),
  ('contract_approver', 'claim_effects', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'claim_effects', ARRAY['text', 'integer', 'interval']::text[], false),
  ('contract_approver', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval']::text[], false),
  ('contract_approver', 'complete_effect', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer']::text[], false),
  ('contract_approver', 'consume_approval', ARRAY['jsonb']::text[], true),
  ('contract_approver', 'consume_approval', ARRAY['text', 'text', 'text', 'text']::text[], true),
  ('contract_approver', 'enqueue_effect', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb']::text[], false),
  ('contract_approver', 'expire_approvals', ARRAY[]::text[], false),
  ('contract_approver', 'fail', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean']::text[], false),
  ('contract_approver', 'fail_effect', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer']::text[], false),
  ('contract_approver', 'grant_role', ARRAY['regrole', 'text']::text[], false),
  ('contract_approver', 'hash_payload', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'metrics', ARRAY['timestamp with time zone']::text[], false),
  ('contract_approver', 'peek_approval', ARRAY['jsonb']::text[], true),
  ('contract_approver', 'peek_approval', ARRAY['text']::text[], true),
  ('contract_approver', 'prometheus', ARRAY[]::text[], false),
  ('contract_approver', 'purge', ARRAY['interval']::text[], false),
  ('contract_approver', 'record_validation', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb']::text[], false),
  ('contract_approver', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text']::text[], false),
  ('contract_approver', 'reinject', ARRAY['bigint', 'text', 'jsonb']::text[], false),
  ('contract_approver', 'renew_lease', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval']::text[], false),
  ('contract_approver', 'request_approval', ARRAY['jsonb']::text[], false),
  ('contract_approver', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text']::text[], false),
  ('contract_approver', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text']::text[], false),
  ('contract_approver', 'set_actions_enabled', ARRAY['boolean', 'text', 'text']::text[], false),
  ('contract_approver', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval']::text[], false),
  ('contract_approver', 'validate', ARRAY['jsonb', 'jsonb']::text[], false),
  ('contract_approver', 'watch_workflow', ARRAY['text', 'interval']::text[], false),
  ('contract_client', 'cas_transition', ARRAY['jsonb']::text[], true),
  ('contract_client', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb']::text[], true),
  ('contract_client', 'claim', ARRAY['jsonb']::text[], true),
  ('contract_client', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text']::text[], true),
  ('contract_client', 'claim_effects', ARRAY['jsonb']::text[], true),
  ('contract_client', 'claim_effects', ARRAY['text', 'integer', 'interval']::text[], true),
  ('contract_client', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval']::text[], true),
  ('contract_client', 'complete_effect', ARRAY['jsonb']::text[], true),
  ('contract_client', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer']::text[], true),
  ('contract_client', 'consume_approval', ARRAY['jsonb']::text[], false),
  ('contract_client', 'consume_approval', ARRAY['text', 'text', 'text', 'text']::text[], false),
  ('contract_client', 'enqueue_effect', ARRAY['jsonb']::text[], true),
  ('contract_client', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb']::text[], true),
  ('contract_client', 'expire_approvals', ARRAY[]::text[], false),
  ('contract_client', 'fail', ARRAY['jsonb']::text[], true),
  ('contract_client', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean']::text[], true),
  ('contract_client', 'fail_effect', ARRAY['jsonb']::text[], true),
  ('contract_client', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer']::text[], true),
  ('contract_client', 'grant_role', ARRAY['regrole', 'text']::text[], false),
  ('contract_client', 'hash_payload', ARRAY['jsonb']::text[], true),
  ('contract_client', 'metrics', ARRAY['timestamp with time zone']::text[], false),
  ('contract_client', 'peek_approval', ARRAY['jsonb']::text[], false),
  ('contract_client', 'peek_approval', ARRAY['text']::text[], false),
  ('contract_client', 'prometheus', ARRAY[]::text[], false),
  ('contract_client', 'purge', ARRAY['interval']::text[], false),
  ('contract_client', 'record_validation', ARRAY['jsonb']::text[], true),
  ('contract_client', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb']::text[], true),
  ('contract_client', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text']::text[], false),
  ('contract_client', 'reinject', ARRAY['bigint', 'text', 'jsonb']::text[], false),
  ('contract_client', 'renew_lease', ARRAY['jsonb']::text[], true),
  ('contract_client', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval']::text[], true),
  ('contract_client', 'request_approval', ARRAY['jsonb']::text[], true),
  ('contract_client', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text']::text[], true),
  ('contract_client', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text']::text[], false),
  ('contract_client', 'set_actions_enabled', ARRAY['boolean', 'text', 'text']::text[], false),
  ('contract_client', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval']::text[], false),
  ('contract_client', 'validate', ARRAY['jsonb', 'jsonb']::text[], true),
  ('contract_client', 'watch_workflow', ARRAY['text', 'interval']::text[], false),
  ('contract_reader', 'cas_transition', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb']::text[], false),
  ('contract_reader', 'claim', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text']::text[], false),
  ('contract_reader', 'claim_effects', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'claim_effects', ARRAY['text', 'integer', 'interval']::text[], false),
  ('contract_reader', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval']::text[], false),
  ('contract_reader', 'complete_effect', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer']::text[], false),
  ('contract_reader', 'consume_approval', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'consume_approval', ARRAY['text', 'text', 'text', 'text']::text[], false),
  ('contract_reader', 'enqueue_effect', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb']::text[], false),
  ('contract_reader', 'expire_approvals', ARRAY[]::text[], false),
  ('contract_reader', 'fail', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean']::text[], false),
  ('contract_reader', 'fail_effect', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer']::text[], false),
  ('contract_reader', 'grant_role', ARRAY['regrole', 'text']::text[], false),
  ('contract_reader', 'hash_payload', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'metrics', ARRAY['timestamp with time zone']::text[], true),
  ('contract_reader', 'peek_approval', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'peek_approval', ARRAY['text']::text[], false),
  ('contract_reader', 'prometheus', ARRAY[]::text[], true),
  ('contract_reader', 'purge', ARRAY['interval']::text[], false),
  ('contract_reader', 'record_validation', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb']::text[], false),
  ('contract_reader', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text']::text[], false),
  ('contract_reader', 'reinject', ARRAY['bigint', 'text', 'jsonb']::text[], false),
  ('contract_reader', 'renew_lease', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval']::text[], false),
  ('contract_reader', 'request_approval', ARRAY['jsonb']::text[], false),
  ('contract_reader', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text']::text[], false),
  ('contract_reader', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text']::text[], false),
  ('contract_reader', 'set_actions_enabled', ARRAY['boolean', 'text', 'text']::text[], false),
  ('contract_reader', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval']::text[], false),
  ('contract_reader', 'validate', ARRAY['jsonb', 'jsonb']::text[], false),
  ('contract_reader', 'watch_workflow', ARRAY['text', 'interval']::text[], false)
) AS t(r, f, a, may);
-- (1.3: a reader reads dead_letters without its payload and error
-- columns, so "reads" is any column.)
SELECT results_eq($$SELECT r.rolname, c.relname::text COLLATE "default", has_any_column_privilege(r.rolname, c.oid, 'SELECT')
                      FROM (VALUES ('contract_client'), ('contract_reader'), ('contract_approver'), ('contract_operator')) AS r(rolname),
                           pg_class c WHERE c.relnamespace = 'idemgate'::regnamespace
                       AND c.relname IN ('alerts', 'events', 'dead_letters', 'approvals', 'runs', 'outbox')
                     ORDER BY 1, 2$$,
                  $$VALUES ('contract_approver', 'alerts', false),
                           ('contract_approver', 'approvals', false),
                           ('contract_approver', 'dead_letters', false),
                           ('contract_approver', 'events', false),
                           ('contract_approver', 'outbox', false),
                           ('contract_approver', 'runs', false),
                           ('contract_client', 'alerts', false),
                           ('contract_client', 'approvals', false),
                           ('contract_client', 'dead_letters', false),
                           ('contract_client', 'events', false),
                           ('contract_client', 'outbox', false),
                           ('contract_client', 'runs', false),
                           ('contract_operator', 'alerts', true),
                           ('contract_operator', 'approvals', false),
                           ('contract_operator', 'dead_letters', true),
                           ('contract_operator', 'events', true),
                           ('contract_operator', 'outbox', true),
                           ('contract_operator', 'runs', true),
                           ('contract_reader', 'alerts', true),
                           ('contract_reader', 'approvals', false),
                           ('contract_reader', 'dead_letters', true),
                           ('contract_reader', 'events', true),
                           ('contract_reader', 'outbox', false),
                           ('contract_reader', 'runs', false)$$,
                  'who reads alerts, events, dead_letters, approvals, runs, outbox');
SELECT is(pg_temp.as_role('contract_client', $q$SELECT outcome FROM idemgate.claim(key => 'contract-p1', payload => '{}')$q$), 'claimed',
          'the client claims');
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', r, q), '42501', m, r || ': ' || q) FROM (VALUES
  ('contract_client', 'SELECT token_hash FROM idemgate.approvals', 'permission denied for table approvals'),
  ('contract_client', 'SELECT idemgate.set_actions_enabled(false, ''x'', ''y'')', 'permission denied for function set_actions_enabled'),
  ('contract_client', 'SELECT * FROM idemgate.metrics()', 'permission denied for function metrics'),
  ('contract_reader', 'SELECT token_hash FROM idemgate.approvals', 'permission denied for table approvals')
) AS t(r, q, m);
SELECT is(pg_temp.as_role('contract_reader', 'SELECT count(*) FROM idemgate.metrics()'), '1', 'the reader: one metrics row');
SELECT lives_ok($$SELECT pg_temp.as_role('contract_reader', 'SELECT count(*) FROM idemgate.alerts')$$, 'the reader reads alerts');
SELECT lives_ok($$SELECT pg_temp.as_role('contract_reader', 'SELECT count(*) FROM idemgate.dead_letters')$$, 'the reader reads dead letters');
SELECT results_eq($$SELECT a.attname::text COLLATE "default", has_column_privilege('contract_reader', 'idemgate.dead_letters', a.attname, 'SELECT')
                      FROM pg_attribute a WHERE a.attrelid = 'idemgate.dead_letters'::regclass AND a.attname IN ('payload', 'error', 'error_class')
                     ORDER BY 1$$,
                  $$VALUES ('error', false), ('error_class', true), ('payload', false)$$,
                  'the reader reads what failed, not its input or error text (1.3)');
-- The operator (everything) can find unknown effects and their errors.
SELECT is(pg_temp.as_role('contract_operator', $q$SELECT state || ' / ' || last_error FROM idemgate.outbox WHERE idempotency_key = 'contract-e1'$q$),
          'completed / 500', 'the operator reads the effect and its error');
SELECT is(pg_temp.as_role('contract_operator', $q$SELECT string_agg(state, ',') FROM idemgate.runs WHERE idempotency_key = 'contract-e1'$q$),
          'completed', 'the operator reads the run');
SELECT idemgate.revoke_role(role => 'contract_operator', bundle => 'operator'), idemgate.revoke_role(role => 'contract_client', bundle => 'client'),
       idemgate.revoke_role(role => 'contract_reader', bundle => 'reader'),
       idemgate.revoke_role(role => 'contract_approver', bundle => 'approver') \g /dev/null
DROP OWNED BY contract_client, contract_reader, contract_approver, contract_operator;
DROP ROLE contract_client, contract_reader, contract_approver, contract_operator;

-- bundle_members lists each right of a bundle once.
SELECT is_empty($$SELECT bundle, coalesce(fn::text, rel::text), count(*) FROM idemgate.bundle_members
                   GROUP BY 1, 2 HAVING count(*) > 1$$, 'each right of a bundle once');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
