-- The pull API per effect type (SPEC §15): a client may claim_effects only
-- the types an operator granted to it with grant_effect_type; a type with a
-- registered endpoint belongs to the dispatcher and only an operator may
-- pull it; complete_effect / fail_effect follow the same rule (and the
-- lease owner rule). Otherwise 42501 with a hint naming grant_effect_type.
-- Before 1.1 any client could pull (and complete, unsent) the dispatcher's
-- effects and every other workflow's.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT; RETURN SQLSTATE || ' hint: ' || h; END $$;
GRANT EXECUTE ON FUNCTION pg_temp.sqlstate_of(text), pg_temp.hint_of(text) TO PUBLIC;

-- Three effects of type pull_mail (no endpoint), one of pull_other.
SELECT cardinality(e.effect_ids)
FROM idemgate.claim('pull-1', '{}') c,
     idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
       '[{"type": "pull_mail", "target": "a", "payload": {}},
         {"type": "pull_mail", "target": "b", "payload": {}},
         {"type": "pull_mail", "target": "d", "payload": {}},
         {"type": "pull_other", "target": "c", "payload": {}}]') e;

CREATE ROLE pull_client;
CREATE ROLE pull_stranger;
CREATE ROLE pull_operator;
CREATE ROLE pull_member IN ROLE pull_client;
SELECT idemgate.grant_role('pull_client', 'client');
SELECT idemgate.grant_role('pull_stranger', 'client');
SELECT idemgate.grant_role('pull_operator', 'operator');

-- Only operators grant.
SET ROLE pull_client;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_effect_type('pull_client', 'pull_mail')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.effect_type_grants$$);
-- Without a grant: 42501, and the hint names grant_effect_type.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
SELECT pg_temp.hint_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
RESET ROLE;

-- Bad arguments.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_effect_type(NULL, 'pull_mail')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_effect_type('pull_client', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_effect_type('pull_client', '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.grant_effect_type(99999999::oid::regrole, 'pull_mail')$$);

-- The operator grants pull_mail to pull_client (twice: idempotent).
SET ROLE pull_operator;
SELECT idemgate.grant_effect_type('pull_client', 'pull_mail');
SELECT idemgate.grant_effect_type('pull_client', 'pull_mail');
SELECT role, effect_type, granted_by FROM idemgate.effect_type_grants ORDER BY 1, 2;
RESET ROLE;
SELECT kind, details FROM idemgate.events WHERE kind LIKE 'effect_type_%' AND details ->> 'role' = 'pull_client' ORDER BY id;

-- The client pulls pull_mail, but not pull_other.
SET ROLE pull_client;
CREATE TEMP TABLE pulled AS SELECT effect_id, target, lease_owner FROM idemgate.claim_effects('pull_mail', 1);
SELECT target FROM pulled;
RESET ROLE;
SELECT effect_id AS fx, lease_owner AS fo FROM pulled \gset
SET ROLE pull_client;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('pull_other')$$);
RESET ROLE;
-- A member of the granted role inherits the grant.
SET ROLE pull_member;
SELECT count(*) AS member_pulled FROM idemgate.claim_effects('pull_mail', 1);
RESET ROLE;

-- Another client may neither pull the type nor complete or fail the
-- client's effect, even holding its lease owner.
SET ROLE pull_stranger;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.complete_effect(%L, %L)$$, :'fx', :'fo'));
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.fail_effect(%L, %L, 'transport')$$, :'fx', :'fo'));
-- An unknown effect still just reports a lost lease.
SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid()) AS unknown_effect;
RESET ROLE;
SELECT state FROM idemgate.outbox WHERE effect_id = (SELECT effect_id FROM pulled);

-- The lease owner completes it.
SET ROLE pull_client;
SELECT idemgate.complete_effect(effect_id, lease_owner) FROM pulled;
RESET ROLE;

-- A type with an endpoint belongs to the dispatcher: even a granted client
-- gets 42501; the operator may pull it. Done in one transaction that is
-- rolled back, so the dispatcher never sees the endpoint or the effect.
BEGIN;
SELECT idemgate.register_endpoint('pull_mail', 'http://127.0.0.1:1/never');
SET LOCAL ROLE pull_client;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
SELECT pg_temp.hint_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
RESET ROLE;
SET LOCAL ROLE pull_operator;
SELECT target FROM idemgate.claim_effects('pull_mail');
ROLLBACK;

-- Revoked: 42501 again; a second revoke says false.
SET ROLE pull_operator;
SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail');
SELECT idemgate.revoke_effect_type('pull_client', 'pull_mail');
RESET ROLE;
SET ROLE pull_client;
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('pull_mail')$$);
RESET ROLE;

-- The superuser (an operator) pulls anything.
SELECT count(*) AS superuser_pulled FROM idemgate.claim_effects('pull_other');

SELECT idemgate.revoke_role('pull_client', 'client');
SELECT idemgate.revoke_role('pull_stranger', 'client');
SELECT idemgate.revoke_role('pull_operator', 'operator');
DELETE FROM idemgate.effect_type_grants WHERE role::text LIKE 'pull_%';
DROP OWNED BY pull_client, pull_stranger, pull_operator, pull_member;
DROP ROLE pull_member, pull_client, pull_stranger, pull_operator;
DELETE FROM idemgate.runs WHERE idempotency_key = 'pull-1';
