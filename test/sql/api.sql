-- api: the SQL contract of SPEC.md §1-§11 in pgTAP — every 1.0 function
-- with its argument types and result type, who may execute it (the four
-- bundles of README's Roles table, given with grant_role), the contract
-- columns of the tables, and the SQLSTATEs callers branch on. Output is
-- TAP; everything runs in one transaction that is rolled back (pgtap too).
\i test/sql/include/quiet.psql
BEGIN;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
CREATE ROLE api_client; CREATE ROLE api_approver; CREATE ROLE api_reader; CREATE ROLE api_operator;
SELECT idemgate.grant_role('api_client', 'client'), idemgate.grant_role('api_approver', 'approver'),
       idemgate.grant_role('api_reader', 'reader'), idemgate.grant_role('api_operator', 'operator') \g /dev/null
SELECT * FROM no_plan();

-- Every function of 1.0 exists with these argument types and result.
SELECT has_function('idemgate', 'actions_enabled', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'actions_enabled', ARRAY[]::name[], 'boolean');
SELECT has_function('idemgate', 'bundle_members_canonical', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'trigger');
SELECT has_function('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb']);
SELECT function_returns('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'bigint');
SELECT has_function('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval']);
SELECT function_returns('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'setof record');
SELECT has_function('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval']);
SELECT function_returns('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'setof record');
SELECT has_function('idemgate', 'claim', ARRAY['jsonb']);
SELECT function_returns('idemgate', 'claim', ARRAY['jsonb'], 'setof record');
SELECT has_function('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text']);
SELECT function_returns('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'setof record');
SELECT has_function('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer']);
SELECT function_returns('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'boolean');
SELECT has_function('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text']);
SELECT function_returns('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'setof record');
SELECT has_function('idemgate', 'control_restore', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'control_restore', ARRAY[]::name[], 'trigger');
SELECT has_function('idemgate', 'dispatcher_status', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'dispatcher_status', ARRAY[]::name[], 'setof record');
SELECT has_function('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb']);
SELECT function_returns('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'setof record');
SELECT has_function('idemgate', 'expire_approvals', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'expire_approvals', ARRAY[]::name[], 'integer');
SELECT has_function('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer']);
SELECT function_returns('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'text');
SELECT has_function('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean']);
SELECT function_returns('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'text');
SELECT has_function('idemgate', 'grant_role', ARRAY['regrole', 'text']);
SELECT function_returns('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'void');
SELECT has_function('idemgate', 'hash_payload', ARRAY['jsonb']);
SELECT function_returns('idemgate', 'hash_payload', ARRAY['jsonb'], 'bytea');
SELECT has_function('idemgate', 'hash_token', ARRAY['text']);
SELECT function_returns('idemgate', 'hash_token', ARRAY['text'], 'bytea');
SELECT has_function('idemgate', 'metrics', ARRAY['timestamp with time zone']);
SELECT function_returns('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'setof record');
SELECT has_function('idemgate', 'peek_approval', ARRAY['text']);
SELECT function_returns('idemgate', 'peek_approval', ARRAY['text'], 'setof record');
SELECT has_function('idemgate', 'prometheus', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'prometheus', ARRAY[]::name[], 'text');
SELECT has_function('idemgate', 'publish_alerts', ARRAY[]::name[]);
SELECT function_returns('idemgate', 'publish_alerts', ARRAY[]::name[], 'integer');
SELECT has_function('idemgate', 'purge_dead_letters', ARRAY['interval']);
SELECT function_returns('idemgate', 'purge_dead_letters', ARRAY['interval'], 'bigint');
SELECT has_function('idemgate', 'purge', ARRAY['interval']);
SELECT function_returns('idemgate', 'purge', ARRAY['interval'], 'bigint');
SELECT has_function('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb']);
SELECT function_returns('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'setof record');
SELECT has_function('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text']);
SELECT function_returns('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'void');
SELECT has_function('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone']);
SELECT function_returns('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'integer');
SELECT has_function('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb']);
SELECT function_returns('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'boolean');
SELECT has_function('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval']);
SELECT function_returns('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'timestamp with time zone');
SELECT has_function('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text']);
SELECT function_returns('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'setof record');
SELECT has_function('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text']);
SELECT function_returns('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'text');
SELECT has_function('idemgate', 'revoke_role', ARRAY['regrole', 'text']);
SELECT function_returns('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'void');
SELECT has_function('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text']);
SELECT function_returns('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'void');
SELECT has_function('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval']);
SELECT function_returns('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'setof record');
SELECT has_function('idemgate', 'unwatch_workflow', ARRAY['text']);
SELECT function_returns('idemgate', 'unwatch_workflow', ARRAY['text'], 'boolean');
SELECT has_function('idemgate', 'validate', ARRAY['jsonb', 'jsonb']);
SELECT function_returns('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'setof record');
SELECT has_function('idemgate', 'watch_workflow', ARRAY['text', 'interval']);
SELECT function_returns('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'void');

-- Who may execute what: client, approver, reader as listed, operator everything.
SELECT function_privs_are('idemgate', 'actions_enabled', ARRAY[]::name[], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'actions_enabled', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'actions_enabled', ARRAY[]::name[], 'api_reader', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'actions_enabled', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'actions_enabled', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'bundle_members_canonical', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'cas_transition', ARRAY['text', 'uuid', 'bigint', 'text', 'jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim_effects', ARRAY['text', 'integer', 'interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim_lease', ARRAY['text', 'bytea', 'uuid', 'interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim', ARRAY['jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim', ARRAY['jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'claim', ARRAY['text', 'jsonb', 'interval', 'text', 'uuid', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'complete_effect', ARRAY['uuid', 'uuid', 'text', 'integer'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'api_approver', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'consume_approval', ARRAY['text', 'text', 'text', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'control_restore', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'control_restore', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'control_restore', ARRAY[]::name[], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'control_restore', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'control_restore', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'dispatcher_status', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'dispatcher_status', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'dispatcher_status', ARRAY[]::name[], 'api_reader', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'dispatcher_status', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'dispatcher_status', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'enqueue_effect', ARRAY['text', 'uuid', 'bigint', 'jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'expire_approvals', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'expire_approvals', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'expire_approvals', ARRAY[]::name[], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'expire_approvals', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'expire_approvals', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'fail_effect', ARRAY['uuid', 'uuid', 'text', 'text', 'interval', 'integer'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'fail', ARRAY['text', 'uuid', 'bigint', 'text', 'text', 'boolean'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'grant_role', ARRAY['regrole', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'hash_payload', ARRAY['jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'hash_payload', ARRAY['jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'hash_payload', ARRAY['jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'hash_payload', ARRAY['jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'hash_payload', ARRAY['jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'api_approver', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'hash_token', ARRAY['text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'api_reader', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'metrics', ARRAY['timestamp with time zone'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'api_approver', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'peek_approval', ARRAY['text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'prometheus', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'prometheus', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'prometheus', ARRAY[]::name[], 'api_reader', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'prometheus', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'prometheus', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'publish_alerts', ARRAY[]::name[], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'publish_alerts', ARRAY[]::name[], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'publish_alerts', ARRAY[]::name[], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'publish_alerts', ARRAY[]::name[], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'publish_alerts', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge_dead_letters', ARRAY['interval'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge_dead_letters', ARRAY['interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge_dead_letters', ARRAY['interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge_dead_letters', ARRAY['interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'purge_dead_letters', ARRAY['interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge', ARRAY['interval'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge', ARRAY['interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge', ARRAY['interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'purge', ARRAY['interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'purge', ARRAY['interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'record_validation', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'register_endpoint', ARRAY['text', 'text', 'interval', 'integer', 'boolean', 'jsonb', 'text', 'double precision', 'integer', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'reinject_all', ARRAY['text', 'text', 'timestamp with time zone'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'reinject', ARRAY['bigint', 'text', 'jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'renew_lease', ARRAY['text', 'uuid', 'bigint', 'interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'request_approval', ARRAY['text', 'uuid', 'bigint', 'jsonb', 'interval', 'jsonb', 'text[]', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'resolve_effect', ARRAY['uuid', 'boolean', 'text', 'text', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'revoke_role', ARRAY['regrole', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'set_actions_enabled', ARRAY['boolean', 'text', 'text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'supersede', ARRAY['text', 'text', 'jsonb', 'text', 'text', 'interval'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'unwatch_workflow', ARRAY['text'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'unwatch_workflow', ARRAY['text'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'unwatch_workflow', ARRAY['text'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'unwatch_workflow', ARRAY['text'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'unwatch_workflow', ARRAY['text'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'api_client', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'api_client', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'api_approver', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'api_reader', ARRAY[]::text[]);
SELECT function_privs_are('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'api_operator', ARRAY['EXECUTE']);
SELECT function_privs_are('idemgate', 'watch_workflow', ARRAY['text', 'interval'], 'public', ARRAY[]::text[]);

-- Tables: readers see events, dead_letters (without payload and error,
-- 1.3) and the views; nobody but the owner writes; a client reads no table.
SELECT table_privs_are('idemgate', t, 'api_reader', ARRAY['SELECT'])
  FROM unnest(ARRAY['events', 'dead_letter_summary', 'alerts', 'key_history', 'approval_status']) t;
SELECT column_privs_are('idemgate', 'dead_letters', c, 'api_reader', CASE WHEN c IN ('payload', 'error') THEN ARRAY[]::text[] ELSE ARRAY['SELECT'] END)
  FROM unnest(ARRAY['id', 'kind', 'idempotency_key', 'effect_id', 'effect_type', 'target', 'payload', 'error_class', 'error',
                    'attempts', 'dead_at', 'reinjected_at', 'reinjected_by']) c;
SELECT table_privs_are('idemgate', t, 'api_operator', ARRAY['SELECT'])
  FROM unnest(ARRAY['runs', 'outbox', 'events', 'dead_letters', 'alerts', 'key_history', 'approval_status']) t;
SELECT table_privs_are('idemgate', t, 'api_client', ARRAY[]::text[])
  FROM unnest(ARRAY['runs', 'outbox', 'approvals', 'events', 'dead_letters', 'endpoints', 'control']) t;
SELECT table_privs_are('idemgate', t, 'public', ARRAY[]::text[])
  FROM unnest(ARRAY['runs', 'outbox', 'approvals', 'events', 'dead_letters', 'endpoints', 'control',
                    'watched_workflows', 'bundle_members', 'granted_bundles']) t;

-- The contract columns (README.md, "Functions", §3, §4, §7, §8).
SELECT col_type_is('idemgate', 'runs', 'idempotency_key', 'text', 'runs.idempotency_key is text');
SELECT col_type_is('idemgate', 'runs', 'workflow', 'text', 'runs.workflow is text');
SELECT col_type_is('idemgate', 'runs', 'state', 'text', 'runs.state is text');
SELECT col_type_is('idemgate', 'runs', 'payload_hash', 'bytea', 'runs.payload_hash is bytea');
SELECT col_type_is('idemgate', 'runs', 'payload', 'jsonb', 'runs.payload is jsonb');
SELECT col_type_is('idemgate', 'runs', 'lease_owner', 'uuid', 'runs.lease_owner is uuid');
SELECT col_type_is('idemgate', 'runs', 'lease_expires_at', 'timestamp with time zone', 'runs.lease_expires_at is timestamp with time zone');
SELECT col_type_is('idemgate', 'runs', 'version', 'bigint', 'runs.version is bigint');
SELECT col_type_is('idemgate', 'runs', 'result', 'jsonb', 'runs.result is jsonb');
SELECT col_type_is('idemgate', 'runs', 'replaces_key', 'text', 'runs.replaces_key is text');
SELECT col_type_is('idemgate', 'runs', 'created_at', 'timestamp with time zone', 'runs.created_at is timestamp with time zone');
SELECT col_type_is('idemgate', 'runs', 'updated_at', 'timestamp with time zone', 'runs.updated_at is timestamp with time zone');
SELECT col_type_is('idemgate', 'outbox', 'effect_id', 'uuid', 'outbox.effect_id is uuid');
SELECT col_type_is('idemgate', 'outbox', 'idempotency_key', 'text', 'outbox.idempotency_key is text');
SELECT col_type_is('idemgate', 'outbox', 'effect_type', 'text', 'outbox.effect_type is text');
SELECT col_type_is('idemgate', 'outbox', 'target', 'text', 'outbox.target is text');
SELECT col_type_is('idemgate', 'outbox', 'payload', 'jsonb', 'outbox.payload is jsonb');
SELECT col_type_is('idemgate', 'outbox', 'state', 'text', 'outbox.state is text');
SELECT col_type_is('idemgate', 'outbox', 'attempts', 'integer', 'outbox.attempts is integer');
SELECT col_type_is('idemgate', 'outbox', 'next_attempt_at', 'timestamp with time zone', 'outbox.next_attempt_at is timestamp with time zone');
SELECT col_type_is('idemgate', 'outbox', 'lease_owner', 'uuid', 'outbox.lease_owner is uuid');
SELECT col_type_is('idemgate', 'outbox', 'provider_id', 'text', 'outbox.provider_id is text');
SELECT col_type_is('idemgate', 'outbox', 'last_status', 'integer', 'outbox.last_status is integer');
SELECT col_type_is('idemgate', 'outbox', 'last_error', 'text', 'outbox.last_error is text');
SELECT col_type_is('idemgate', 'approvals', 'approval_id', 'uuid', 'approvals.approval_id is uuid');
SELECT col_type_is('idemgate', 'approvals', 'idempotency_key', 'text', 'approvals.idempotency_key is text');
SELECT col_type_is('idemgate', 'approvals', 'token_hash', 'bytea', 'approvals.token_hash is bytea');
SELECT col_type_is('idemgate', 'dead_letters', 'id', 'bigint', 'dead_letters.id is bigint');
SELECT col_type_is('idemgate', 'dead_letters', 'kind', 'text', 'dead_letters.kind is text');
SELECT col_type_is('idemgate', 'dead_letters', 'idempotency_key', 'text', 'dead_letters.idempotency_key is text');
SELECT col_type_is('idemgate', 'dead_letters', 'effect_id', 'uuid', 'dead_letters.effect_id is uuid');
SELECT col_type_is('idemgate', 'dead_letters', 'payload', 'jsonb', 'dead_letters.payload is jsonb');
SELECT col_type_is('idemgate', 'dead_letters', 'error_class', 'text', 'dead_letters.error_class is text');
SELECT col_type_is('idemgate', 'dead_letters', 'error', 'text', 'dead_letters.error is text');
SELECT col_type_is('idemgate', 'dead_letters', 'reinjected_at', 'timestamp with time zone', 'dead_letters.reinjected_at is timestamp with time zone');
SELECT col_type_is('idemgate', 'events', 'id', 'bigint', 'events.id is bigint');
SELECT col_type_is('idemgate', 'events', 'at', 'timestamp with time zone', 'events.at is timestamp with time zone');
SELECT col_type_is('idemgate', 'events', 'idempotency_key', 'text', 'events.idempotency_key is text');
SELECT col_type_is('idemgate', 'events', 'effect_id', 'uuid', 'events.effect_id is uuid');
SELECT col_type_is('idemgate', 'events', 'kind', 'text', 'events.kind is text');
SELECT col_type_is('idemgate', 'events', 'actor', 'text', 'events.actor is text');
SELECT col_type_is('idemgate', 'events', 'details', 'jsonb', 'events.details is jsonb');
SELECT col_is_pk('idemgate', 'runs', 'idempotency_key', 'runs.idempotency_key is the primary key');
SELECT col_is_pk('idemgate', 'outbox', 'effect_id', 'outbox.effect_id is the primary key');

-- SQLSTATEs callers branch on: 22004 a required argument is NULL, 22023
-- out of range or malformed (naming the argument), IG001 same key with
-- another payload, IG002 illegal transition, IG003 unknown object.
SELECT throws_ok($$SELECT * FROM idemgate.claim(NULL, '{}')$$, '22004', NULL, 'claim: NULL key');
SELECT throws_ok($$SELECT * FROM idemgate.claim('', '{}')$$, '22023', NULL, 'claim: empty key');
SELECT throws_ok($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$, '22023', NULL, 'claim: key over 512 bytes');
SELECT throws_ok($$SELECT * FROM idemgate.claim('api-1', '{}', '0 seconds')$$, '22023', NULL, 'claim: lease not positive');
SELECT lives_ok($$SELECT * FROM idemgate.claim('api-1', '{"a": 1}')$$, 'claim: a new key');
SELECT throws_ok($$SELECT * FROM idemgate.claim('api-1', '{"a": 2}')$$, 'IG001', NULL, 'claim: same key, other payload');
SELECT throws_ok($$SELECT idemgate.cas_transition('api-1', lease_owner, version, 'approved') FROM idemgate.runs WHERE idempotency_key = 'api-1'$$,
                 'IG002', NULL, 'cas_transition: processing → approved only via enqueue_effect');
SELECT throws_ok($$SELECT idemgate.cas_transition('api-1', lease_owner, version, 'no_such_state') FROM idemgate.runs WHERE idempotency_key = 'api-1'$$,
                 '22023', NULL, 'cas_transition: unknown state');
SELECT throws_ok($$SELECT idemgate.reinject(-1, 'ops')$$, 'IG003', NULL, 'reinject: unknown dead letter');
SELECT throws_ok($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'ops', NULL, NULL)$$, 'IG003', NULL, 'resolve_effect: unknown effect');
SELECT throws_ok($$SELECT idemgate.grant_role('api_client', 'admin')$$, '22023', NULL, 'grant_role: unknown bundle');
SELECT throws_ok($$SELECT * FROM idemgate.validate('{}', '{"type": "no_such_type"}')$$, '22023', NULL, 'validate: bad schema');
-- No event row has kind 'claimed' (a first claim writes none; its time is
-- runs.created_at): no partial index nor the silence alert may ask for it,
-- or the index would not serve the query (10_release.sql).
SELECT is((SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
            WHERE c.relnamespace = 'idemgate'::regnamespace
              AND pg_get_expr(i.indpred, i.indrelid) LIKE '%''claimed''%'), 0::bigint,
          'no partial index on kind ''claimed''');
SELECT unalike(pg_get_viewdef('idemgate.alert_instances'::regclass), '%''claimed''%'::text,
               'the silence alert does not look for kind ''claimed'''::text);

-- What a bundle may not do is function_privs_are/table_privs_are above;
-- the privileges regress test runs each refused call as its role (42501).

SELECT * FROM finish();
ROLLBACK;

