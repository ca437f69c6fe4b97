-- contract: the SQL contract of SPEC.md checked as callers use it (named
-- notation), section by section: signatures and result columns, the rows of
-- NULLs, SQLSTATEs, bundles, and what pg_dump needs to restore a database.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
\pset null '<null>'
CREATE FUNCTION pg_temp.code_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;

-- Every function the SPEC names, with its exact arguments, defaults and result.
SELECT p.proname, pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result
FROM pg_proc p
WHERE p.pronamespace = 'idemgate'::regnamespace
  AND p.proname IN ('claim', 'claim_lease', 'hash_payload', 'cas_transition', 'renew_lease', 'fail',
                    'supersede', 'validate', 'record_validation', 'request_approval', 'hash_token',
                    'peek_approval', 'consume_approval', 'expire_approvals', 'enqueue_effect',
                    'claim_effects', 'complete_effect', 'fail_effect', 'register_endpoint', 'reinject',
                    'reinject_all', 'resolve_effect', 'metrics', 'prometheus', 'watch_workflow',
                    'set_actions_enabled', 'actions_enabled', 'purge', 'grant_role', 'revoke_role')
ORDER BY 1, 2;
-- Contract columns of the tables and views.
SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) AS columns
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relname IN ('alerts', 'events')
GROUP BY c.relname ORDER BY 1;
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
JOIN (VALUES
  ('runs', '{idempotency_key,workflow,state,payload_hash,payload,lease_owner,lease_expires_at,version,result,replaces_key,created_at,updated_at}'::text[]),
  ('approvals', '{approval_id,idempotency_key,token_hash,allowed_decisions,audience,requested_by,expires_at,consumed_at,decision,approver_subject,card,effects,created_at}'),
  ('outbox', '{effect_id,idempotency_key,effect_type,target,payload,state,attempts,next_attempt_at,lease_owner,lease_expires_at,provider_id,last_status,last_error,created_at,updated_at}'),
  ('dead_letters', '{id,kind,idempotency_key,effect_id,payload,error_class,error,attempts,dead_at,reinjected_at,reinjected_by}')
) AS want(rel, cols) ON want.rel = c.relname AND a.attname = ANY (want.cols)
WHERE c.relnamespace = 'idemgate'::regnamespace AND a.attnum > 0
ORDER BY 1, array_position(want.cols, a.attname::text);

-- pg_dump: the identity sequences of events and dead_letters are dumped with
-- the rows (or a restored database reuses ids and every event insert fails),
-- and so is the record of granted bundles; bundle_members, filled by CREATE
-- EXTENSION itself, is not (no duplicate rows).
SELECT c::regclass AS dumped FROM pg_extension e, unnest(e.extconfig) AS c
WHERE e.extname = 'idemgate' ORDER BY c::regclass::text;
-- The kill switch row is dumped too; restoring it (COPY of the dumped row)
-- updates the row CREATE EXTENSION made: one row, the restored state.
INSERT INTO idemgate.control (singleton, actions_enabled, changed_at, changed_by, reason)
VALUES (true, false, '2026-01-02 03:04:05+00', 'contract', 'restored');
SELECT count(*) AS control_rows, bool_and(actions_enabled) AS enabled, min(changed_by) AS changed_by,
       min(reason) AS reason, min(changed_at) = '2026-01-02 03:04:05+00' AS changed_at_kept
FROM idemgate.control;
SELECT idemgate.actions_enabled() AS enabled_after_restore;
SELECT idemgate.set_actions_enabled(enabled => true, actor => 'qa', reason => 'contract');

-- pg_upgrade refuses user columns of reg* types other than regclass, regrole
-- and regtype (the oids they store change), so no idemgate table has one.
SELECT c.relname, a.attname, t.typname AS blocks_pg_upgrade
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'p', 'm')
  AND ltrim(t.typname, '_') LIKE 'reg%' AND ltrim(t.typname, '_') NOT IN ('regclass', 'regrole', 'regtype')
ORDER BY 1, 2;
-- bundle_members.fn is therefore text: always the qualified regprocedure
-- output, and only of an existing function. Names are resolved with
-- search_path = pg_catalog, pg_temp whatever the inserter's search_path, so
-- an unqualified name is unknown (42883).
SELECT count(*) FILTER (WHERE fn <> fn::regprocedure::text) AS not_canonical,
       count(*) FILTER (WHERE fn NOT LIKE 'idemgate.%') AS not_qualified
FROM idemgate.bundle_members WHERE fn IS NOT NULL;
BEGIN;
SET LOCAL search_path = idemgate, public;
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'IDEMGATE.Metrics( timestamptz )') RETURNING fn;
ROLLBACK;
SET search_path = idemgate, public;
SELECT pg_temp.code_of($$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'metrics(timestamptz)')$$) AS unqualified,
       pg_temp.code_of($$INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('reader', 'idemgate.no_such_function()')$$) AS unknown_function;
RESET search_path;

-- §1 claim: new, duplicate (lease_owner NULL), IG001 on another payload.
SELECT outcome, idempotency_key, state, lease_owner IS NOT NULL AS has_owner, version, result
FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}', lease => '1 minute', workflow => 'qa');
SELECT outcome, idempotency_key, state, lease_owner, version, result
FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}');
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 2}')$$) AS other_payload;
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim(key => NULL, payload => '{}')$$) AS null_key;
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim(key => '', payload => '{}')$$) AS empty_key;
SELECT outcome, state FROM idemgate.claim(request => '{"key": "contract-c1", "payload": {"a": 1}}');
SELECT pg_temp.code_of($$SELECT * FROM idemgate.claim(request => '{"payload": {}}')$$) AS request_without_key;
-- claim_lease never raises for a busy or finished key or another payload.
SELECT count(*) AS busy FROM idemgate.claim_lease(key => 'contract-c1',
  payload_hash => idemgate.hash_payload(payload => '{"a": 1}'), owner => gen_random_uuid(), lease => '1 minute');
SELECT count(*) AS other_hash FROM idemgate.claim_lease(key => 'contract-c1',
  payload_hash => idemgate.hash_payload(payload => '{"a": 9}'), owner => gen_random_uuid(), lease => '1 minute');
SELECT idemgate.hash_payload(payload => '{"b": 1, "a": 2}') = sha256(convert_to('{"a": 2, "b": 1}', 'UTF8')) AS hash_ok;
-- ownership lost: NULL from cas_transition, renew_lease, fail; rows of NULLs
-- from request_approval and enqueue_effect.
SELECT idemgate.cas_transition(key => 'contract-c1', owner => gen_random_uuid(), version => 0, new_state => 'completed') AS cas,
       idemgate.renew_lease(key => 'contract-c1', owner => gen_random_uuid(), version => 0, extend_by => '1 minute') AS renew,
       idemgate.fail(key => 'contract-c1', owner => gen_random_uuid(), version => 0, error_class => 'x', error => 'y', retryable => true) AS fail;
SELECT * FROM idemgate.request_approval(key => 'contract-c1', owner => gen_random_uuid(), version => 0,
  effects => '{"type": "contract_t", "target": "a", "payload": {}}');
SELECT * FROM idemgate.enqueue_effect(key => 'contract-c1', owner => gen_random_uuid(), version => 0,
  effects => '{"type": "contract_t", "target": "a", "payload": {}}');
SELECT lease_owner AS o FROM idemgate.runs WHERE idempotency_key = 'contract-c1' \gset
SELECT pg_temp.code_of(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 0, new_state => 'nope')$$, :'o')) AS bad_state,
       pg_temp.code_of(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 0, new_state => 'approved')$$, :'o')) AS to_approved;
SELECT idemgate.cas_transition(key => 'contract-c1', owner => :'o', version => 0, new_state => 'completed', result => '{"r": 1}') AS v;
SELECT outcome, state, lease_owner, result FROM idemgate.claim(key => 'contract-c1', payload => '{"a": 1}');
SELECT pg_temp.code_of(format($$SELECT idemgate.cas_transition(key => 'contract-c1', owner => %L, version => 1, new_state => 'processing')$$, :'o')) AS from_completed;
-- supersede: only of a terminal original; same row as claim.
SELECT outcome, idempotency_key, state, version
FROM idemgate.supersede(original_key => 'contract-c1', new_key => 'contract-c1b', payload => '{"a": 1}',
                        operator => 'qa', reason => 'replay');
SELECT replaces_key FROM idemgate.runs WHERE idempotency_key = 'contract-c1b';
SELECT pg_temp.code_of($$SELECT * FROM idemgate.supersede(original_key => 'contract-c1b', new_key => 'contract-c1c',
  payload => '{}', operator => 'qa', reason => 'r')$$) AS original_not_terminal;

-- §3 approvals: the token once (43 base64url chars), peek, exactly one row
-- from consume_approval that hides why it is invalid.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-a1', payload => '{}') \gset
SELECT token, length(token) AS token_length, token ~ '^[A-Za-z0-9_-]{43}$' AS base64url, version AS av
FROM idemgate.request_approval(key => 'contract-a1', owner => :'o', version => :v,
  effects => '[{"type": "contract_t", "target": "a", "payload": {"n": 1}}, {"type": "contract_t", "target": "b", "payload": {}}]',
  expires_in => '1 hour', card => '{"title": "t"}', audience => '{ana,bea}', requested_by => 'rui') \gset
SELECT :token_length AS token_length, :'base64url' AS base64url, :av AS version;
SELECT (SELECT token_hash FROM idemgate.approvals WHERE idempotency_key = 'contract-a1') = idemgate.hash_token(token => :'token') AS token_hash_ok,
       (SELECT token_hash FROM idemgate.approvals WHERE idempotency_key = 'contract-a1') = sha256(convert_to(:'token', 'UTF8')) AS sha256_ok;
SELECT idempotency_key, status, allowed_decisions, card ->> 'title' AS title, jsonb_array_length(effects) AS effects
FROM idemgate.peek_approval(token => :'token');
SELECT count(*) AS unknown_token FROM idemgate.peek_approval(token => 'contract-nothing');
SELECT * FROM idemgate.consume_approval(token => :'token', decision => 'approve', approver => 'rui');
SELECT * FROM idemgate.consume_approval(token => :'token', decision => 'approve', approver => 'eva');
SELECT * FROM idemgate.consume_approval(token => :'token', decision => 'maybe', approver => 'ana');
SELECT * FROM idemgate.consume_approval(token => 'contract-nothing', decision => 'approve', approver => 'ana');
SELECT outcome, idempotency_key, cardinality(effect_ids) AS effects
FROM idemgate.consume_approval(token => :'token', decision => 'approve', approver => 'ana');
SELECT * FROM idemgate.consume_approval(token => :'token', decision => 'approve', approver => 'bea');
SELECT status FROM idemgate.peek_approval(token => :'token');
SELECT state FROM idemgate.runs WHERE idempotency_key = 'contract-a1';
SELECT target, state, attempts FROM idemgate.outbox WHERE idempotency_key = 'contract-a1' ORDER BY target;
-- a rejection: failed_terminal, nothing enqueued, no dead letter.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-a2', payload => '{}') \gset
SELECT token FROM idemgate.request_approval(key => 'contract-a2', owner => :'o', version => :v,
  effects => '{"type": "contract_t", "target": "a", "payload": {}}') \gset
SELECT outcome, idempotency_key FROM idemgate.consume_approval(token => :'token', decision => 'reject', approver => 'ana');
SELECT state, (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key) AS effects,
       (SELECT count(*) FROM idemgate.dead_letters d WHERE d.idempotency_key = r.idempotency_key) AS dead_letters
FROM idemgate.runs r WHERE idempotency_key = 'contract-a2';

-- §4/§5 enqueue_effect: one row per (key, type, target); claim_effects holds
-- everything while the kill switch is off and lets it go after.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-e1', payload => '{}') \gset
SELECT cardinality(effect_ids) AS effects, version AS v2 FROM idemgate.enqueue_effect(key => 'contract-e1', owner => :'o', version => :v,
  effects => '{"type": "contract_e", "target": "x", "payload": {"p": 1}}') \gset
SELECT :effects AS effects, :v2 = :v + 1 AS version_bumped;
SELECT * FROM idemgate.enqueue_effect(key => 'contract-e1', owner => :'o', version => :v,
  effects => '{"type": "contract_e", "target": "x", "payload": {"p": 1}}');
SELECT count(*) AS rows_for_key, (SELECT state FROM idemgate.runs WHERE idempotency_key = 'contract-e1') AS run_state
FROM idemgate.outbox WHERE idempotency_key = 'contract-e1';
SELECT idemgate.set_actions_enabled(enabled => false, actor => 'qa', reason => 'contract');
SELECT idemgate.actions_enabled() AS enabled_now;
SELECT count(*) AS claimed_while_off FROM idemgate.claim_effects(effect_type => 'contract_e', batch => 10, lease => '1 minute');
SELECT idemgate.set_actions_enabled(enabled => true, actor => 'qa', reason => 'contract');
SELECT effect_id AS e, lease_owner AS eo, attempt, target, payload
FROM idemgate.claim_effects(effect_type => 'contract_e', batch => 10, lease => '1 minute') \gset
SELECT :attempt AS attempt, :'target' AS target, :'payload' AS payload;
-- backoff of the first retry: 1 s × (1 + U[0, 0.5)).
SELECT idemgate.fail_effect(effect_id => :'e', owner => :'eo', error_class => 'transport', error => 'refused') AS new_state;
SELECT state, attempts, next_attempt_at - updated_at BETWEEN interval '1 s' AND interval '1.51 s' AS backoff_ok
FROM idemgate.outbox WHERE effect_id = :'e';
SELECT pg_temp.code_of(format($$SELECT idemgate.fail_effect(effect_id => %L, owner => %L, error_class => 'bogus')$$, :'e', :'eo')) AS bad_class;
SELECT idemgate.complete_effect(effect_id => :'e', owner => :'eo', provider_id => 'late') AS lease_lost;
-- server_error → unknown, never claimed again; resolve_effect settles it.
UPDATE idemgate.outbox SET next_attempt_at = now() WHERE effect_id = :'e';
SELECT effect_id AS e, lease_owner AS eo, attempt FROM idemgate.claim_effects(effect_type => 'contract_e') \gset
SELECT :attempt AS attempt, idemgate.fail_effect(effect_id => :'e', owner => :'eo', error_class => 'server_error', error => '500') AS new_state;
SELECT count(*) AS unknown_claimed FROM idemgate.claim_effects(effect_type => 'contract_e');
SELECT idemgate.resolve_effect(effect_id => :'e', delivered => true, actor => 'qa', provider_id => 'prov-1', note => 'checked') AS resolved;
SELECT o.state, o.provider_id, r.state AS run_state
FROM idemgate.outbox o JOIN idemgate.runs r USING (idempotency_key) WHERE o.effect_id = :'e';
SELECT pg_temp.code_of($$SELECT idemgate.resolve_effect(effect_id => gen_random_uuid(), delivered => true, actor => 'qa')$$) AS unknown_effect;

-- §7 a run dead letter is reinjected at most once; the run recovers.
SELECT lease_owner AS o, version AS v FROM idemgate.claim(key => 'contract-d1', payload => '{"d": 1}') \gset
SELECT idemgate.fail(key => 'contract-d1', owner => :'o', version => :v, error_class => 'model', error => 'bad', retryable => false) AS new_state;
SELECT kind, effect_id, payload, error_class, error FROM idemgate.dead_letters WHERE idempotency_key = 'contract-d1';
SELECT id AS dl FROM idemgate.dead_letters WHERE idempotency_key = 'contract-d1' \gset
SELECT idemgate.reinject(id => :dl, actor => 'qa') AS first, idemgate.reinject(id => :dl, actor => 'qa') AS second;
SELECT outcome, state FROM idemgate.claim(key => 'contract-d1', payload => '{"d": 1}');
SELECT pg_temp.code_of('SELECT idemgate.reinject(id => -1, actor => ''qa'')') AS unknown_dead_letter;

-- §8 metrics: exactly one row with these columns and types.
SELECT count(*) AS metric_rows FROM idemgate.metrics(since => now() - interval '1 hour');
SELECT (SELECT count(*) FROM regexp_split_to_table(idemgate.prometheus(), E'\n') l
        WHERE l <> '' AND l !~ '^# (HELP|TYPE) idemgate_[a-z_]+ .+$'
          AND l !~ '^idemgate_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$') AS bad_prometheus_lines,
       right(idemgate.prometheus(), 1) = E'\n' AS ends_with_newline;

-- §11 bundles: exactly the SPEC's rights.
CREATE ROLE contract_client;
CREATE ROLE contract_reader;
CREATE ROLE contract_approver;
CREATE ROLE contract_operator;
SELECT idemgate.grant_role(role => 'contract_client', bundle => 'client');
SELECT idemgate.grant_role(role => 'contract_reader', bundle => 'reader');
SELECT idemgate.grant_role(role => 'contract_approver', bundle => 'approver');
SELECT idemgate.grant_role(role => 'contract_operator', bundle => 'operator');
SELECT r.rolname, f.fn, has_function_privilege(r.rolname, f.fn, 'EXECUTE') AS may
FROM (VALUES ('contract_client'), ('contract_reader'), ('contract_approver')) AS r(rolname),
     (SELECT p.oid::regprocedure::text AS fn FROM pg_proc p WHERE p.pronamespace = 'idemgate'::regnamespace
        AND p.proname IN ('claim', 'claim_lease', 'hash_payload', 'cas_transition', 'renew_lease', 'fail',
                          'validate', 'record_validation', 'request_approval', 'enqueue_effect', 'claim_effects',
                          'complete_effect', 'fail_effect', 'peek_approval', 'consume_approval', 'metrics',
                          'prometheus', 'reinject', 'resolve_effect', 'supersede', 'set_actions_enabled',
                          'register_endpoint', 'watch_workflow', 'purge', 'grant_role', 'expire_approvals')) AS f
ORDER BY 1, 2;
SELECT r.rolname, c.relname, has_table_privilege(r.rolname, c.oid, 'SELECT') AS may
FROM (VALUES ('contract_client'), ('contract_reader'), ('contract_approver'), ('contract_operator')) AS r(rolname),
     pg_class c WHERE c.relnamespace = 'idemgate'::regnamespace
  AND c.relname IN ('alerts', 'events', 'dead_letters', 'approvals', 'runs', 'outbox')
ORDER BY 1, 2;
SET ROLE contract_client;
SELECT outcome FROM idemgate.claim(key => 'contract-p1', payload => '{}');
SELECT pg_temp.code_of('SELECT token_hash FROM idemgate.approvals') AS token_hash,
       pg_temp.code_of('SELECT idemgate.set_actions_enabled(false, ''x'', ''y'')') AS kill_switch,
       pg_temp.code_of('SELECT * FROM idemgate.metrics()') AS metrics;
RESET ROLE;
SET ROLE contract_reader;
SELECT count(*) AS metric_rows FROM idemgate.metrics();
SELECT count(*) >= 0 AS alerts_ok FROM idemgate.alerts;
SELECT count(*) >= 0 AS dead_letters_ok FROM idemgate.dead_letters;
SELECT pg_temp.code_of('SELECT token_hash FROM idemgate.approvals') AS token_hash;
RESET ROLE;
-- The operator (everything) can find unknown effects and their errors.
SET ROLE contract_operator;
SELECT state, last_error FROM idemgate.outbox WHERE idempotency_key = 'contract-e1';
SELECT state FROM idemgate.runs WHERE idempotency_key = 'contract-e1';
RESET ROLE;
SELECT idemgate.revoke_role(role => 'contract_operator', bundle => 'operator');
SELECT idemgate.revoke_role(role => 'contract_client', bundle => 'client');
SELECT idemgate.revoke_role(role => 'contract_reader', bundle => 'reader');
SELECT idemgate.revoke_role(role => 'contract_approver', bundle => 'approver');
DROP OWNED BY contract_client, contract_reader, contract_approver, contract_operator;
DROP ROLE contract_client, contract_reader, contract_approver, contract_operator;

-- bundle_members lists each right of a bundle once.
SELECT bundle, coalesce(fn::text, rel::text) AS member, count(*) FROM idemgate.bundle_members
GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2;
