-- The pull API per effect type (README.md, "Security"): a client may claim_effects only
-- the types an operator granted to it with grant_effect_type; a type with a
-- registered endpoint belongs to the dispatcher and only an operator may
-- pull it; complete_effect / fail_effect follow the same rule (and the
-- lease owner rule). Otherwise 42501 with a hint naming grant_effect_type.
-- Before 1.1 any client could pull (and complete, unsent) the dispatcher's
-- effects and every other workflow's. pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
-- hint_of(q): the hint of the error q raises (pgTAP's throws_ok checks the
-- SQLSTATE and message, not the hint).
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT; RETURN SQLSTATE || ' hint: ' || h; END $$;
SELECT * FROM no_plan();

-- Three effects of type pull_mail (no endpoint), one of pull_other.
SELECT is((SELECT cardinality(e.effect_ids)
           FROM idemgate.claim('pull-1', '{}') c,
                idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
                  '[{"type": "pull_mail", "target": "a", "payload": {}},
                    {"type": "pull_mail", "target": "b", "payload": {}},
                    {"type": "pull_mail", "target": "d", "payload": {}},
                    {"type": "pull_other", "target": "c", "payload": {}}]') e), 4, 'four effects');

CREATE ROLE pull_client;
CREATE ROLE pull_stranger;
CREATE ROLE pull_operator;
CREATE ROLE pull_member IN ROLE pull_client;
SELECT idemgate.grant_role('pull_client', 'client'), idemgate.grant_role('pull_stranger', 'client'),
       idemgate.grant_role('pull_operator', 'operator') \g /dev/null

-- Only operators grant.
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', 'pull_client', q), '42501', m, 'a client: ' || q) FROM (VALUES
  ($$SELECT idemgate.grant_effect_type('pull_client', 'pull_mail')$$, 'permission denied for function grant_effect_type'),
  ($$SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail')$$, 'permission denied for function revoke_effect_type'),
  ($$SELECT * FROM idemgate.effect_type_grants$$, 'permission denied for table effect_type_grants'),
-- Without a grant: 42501, and the hint names grant_effect_type.
  ($$SELECT * FROM idemgate.claim_effects('pull_mail')$$, 'permission denied to pull effects of type "pull_mail"')
) AS t(q, m);
SELECT is(pg_temp.hint_of($$SELECT pg_temp.as_role('pull_client', $q$SELECT * FROM idemgate.claim_effects('pull_mail')$q$)$$),
          '42501 hint: An operator grants it with idemgate.grant_effect_type(role, effect_type).', 'the hint names grant_effect_type');

-- Bad arguments.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.grant_effect_type(NULL, 'pull_mail')$$, '22004', 'argument "role" must not be NULL'),
  ($$SELECT idemgate.grant_effect_type('pull_client', NULL)$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.grant_effect_type('pull_client', '')$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.grant_effect_type(99999999::oid::regrole, 'pull_mail')$$, '22023', 'argument "role" must name an existing role, not OID 99999999')
) AS t(q, code, m);

-- The operator grants pull_mail to pull_client (twice: idempotent).
SELECT lives_ok($$SELECT pg_temp.as_role('pull_operator', $q$SELECT idemgate.grant_effect_type('pull_client', 'pull_mail')$q$)$$,
                'the operator grants pull_mail');
SELECT lives_ok($$SELECT pg_temp.as_role('pull_operator', $q$SELECT idemgate.grant_effect_type('pull_client', 'pull_mail')$q$)$$,
                'and again');
SELECT is(pg_temp.as_role('pull_operator', $q$SELECT string_agg(format('%s|%s|%s', role, effect_type, granted_by), ';' ORDER BY role::text, effect_type)
                                             FROM idemgate.effect_type_grants$q$),
          'pull_client|pull_mail|postgres', 'the operator reads the one grant');
SELECT results_eq($$SELECT kind, details FROM idemgate.events WHERE kind LIKE 'effect_type_%' AND details ->> 'role' = 'pull_client' ORDER BY id$$,
                  $$VALUES ('effect_type_granted', '{"role": "pull_client", "effect_type": "pull_mail"}'::jsonb)$$,
                  'one grant event');

-- The client pulls pull_mail, but not pull_other.
SET ROLE pull_client;
CREATE TEMP TABLE pulled AS SELECT effect_id, target, lease_owner FROM idemgate.claim_effects('pull_mail', 1);
RESET ROLE;
SELECT results_eq($$SELECT target FROM pulled$$, $$VALUES ('a')$$, 'the client pulled a');
SELECT effect_id AS fx, lease_owner AS fo FROM pulled \gset
SELECT throws_ok($$SELECT pg_temp.as_role('pull_client', $q$SELECT * FROM idemgate.claim_effects('pull_other')$q$)$$,
                 '42501', 'permission denied to pull effects of type "pull_other"', 'but not pull_other');
-- A member of the granted role inherits the grant.
SELECT is(pg_temp.as_role('pull_member', $q$SELECT count(*) FROM idemgate.claim_effects('pull_mail', 1)$q$), '1',
          'a member of the granted role pulls');

-- Another client may neither pull the type nor complete or fail the
-- client's effect, even holding its lease owner.
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', 'pull_stranger', q), '42501',
                 'permission denied to pull effects of type "pull_mail"', 'a stranger: ' || what) FROM (VALUES
  ('claim_effects', $$SELECT * FROM idemgate.claim_effects('pull_mail')$$),
  ('complete_effect', format($$SELECT idemgate.complete_effect(%L, %L)$$, :'fx', :'fo')),
  ('fail_effect', format($$SELECT idemgate.fail_effect(%L, %L, 'transport')$$, :'fx', :'fo'))
) AS t(what, q);
-- An unknown effect still just reports a lost lease.
SELECT is(pg_temp.as_role('pull_stranger', 'SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid())'), 'false',
          'an unknown effect: a lost lease');
SELECT is((SELECT state FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM pulled)), 'sending', 'the client''s effect is still sending');

-- The lease owner completes it.
SELECT is(pg_temp.as_role('pull_client', format('SELECT idemgate.complete_effect(%L, %L)', :'fx', :'fo')), 'true',
          'the lease owner completes it');

-- A type with an endpoint belongs to the dispatcher: even a granted client
-- gets 42501; the operator may pull it. Done in one transaction that is
-- rolled back, so the dispatcher never sees the endpoint or the effect.
BEGIN;
SELECT idemgate.register_endpoint('pull_mail', 'http://127.0.0.1:1/never') \g /dev/null
SELECT throws_ok($$SELECT pg_temp.as_role('pull_client', $q$SELECT * FROM idemgate.claim_effects('pull_mail')$q$)$$,
                 '42501', 'permission denied to pull effects of type "pull_mail"', 'a granted client may not pull a type with an endpoint');
SELECT is(pg_temp.hint_of($$SELECT pg_temp.as_role('pull_client', $q$SELECT * FROM idemgate.claim_effects('pull_mail')$q$)$$),
          '42501 hint: Pull a type without an endpoint, granted with idemgate.grant_effect_type(role, effect_type), or let the dispatcher deliver this one.',
          'the hint says so');
SELECT is(pg_temp.as_role('pull_operator', $q$SELECT string_agg(target, ',') FROM idemgate.claim_effects('pull_mail')$q$), 'd',
          'the operator pulls it');
ROLLBACK;

-- Revoked: 42501 again; a second revoke says false.
SELECT is(pg_temp.as_role('pull_operator', $q$SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail')$q$), 'true', 'revoked');
SELECT is(pg_temp.as_role('pull_operator', $q$SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail')$q$), 'false', 'a second revoke: false');
SELECT throws_ok($$SELECT pg_temp.as_role('pull_client', $q$SELECT * FROM idemgate.claim_effects('pull_mail')$q$)$$,
                 '42501', 'permission denied to pull effects of type "pull_mail"', 'revoked: 42501 again');

-- The superuser (an operator) pulls anything.
SELECT is((SELECT count(*) FROM idemgate.claim_effects('pull_other')), 1::bigint, 'the superuser pulls pull_other');

SELECT idemgate.revoke_role('pull_client', 'client'), idemgate.revoke_role('pull_stranger', 'client'),
       idemgate.revoke_role('pull_operator', 'operator') \g /dev/null
DELETE FROM idemgate.effect_type_grants WHERE role::text LIKE 'pull_%';
DROP OWNED BY pull_client, pull_stranger, pull_operator, pull_member;
DROP ROLE pull_member, pull_client, pull_stranger, pull_operator;
DELETE FROM idemgate.outbox WHERE idempotency_key = 'pull-1';
DELETE FROM idemgate.approvals WHERE idempotency_key = 'pull-1';
DELETE FROM idemgate.runs WHERE idempotency_key = 'pull-1';

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
