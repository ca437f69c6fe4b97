-- The mistakes a newcomer makes get a clear message at once (1.3,
-- src/policy/undeclared_types.c, src/core/extension_notice.c, src/approvals/approvals.c):
-- - an effect type that no endpoint, pull grant or policy declares (a typo)
--   is accepted by enqueue_effect with a NOTICE naming the declared types
--   (the contract stays open: an operator may pull any type); a declared
--   type gets none;
-- - grant_effect_type of a type nothing names yet: a NOTICE too;
-- - CREATE EXTENSION idemgate SCHEMA x: refused saying idemgate keeps its
--   own schema (PostgreSQL's words were "must be installed in schema
--   pg_catalog");
-- - peek_approval($1) given a whole request without ::jsonb picks the
--   typed form: refused (42804) instead of answering no row.
-- Before 1.3 each of these was silent or misleading. Run in a transaction
-- that first removes what earlier tests declared, so the lists are ours.
CREATE EXTENSION IF NOT EXISTS idemgate;
SET client_min_messages = notice;
\set VERBOSITY default
BEGIN;
DELETE FROM idemgate.endpoints;
DELETE FROM idemgate.effect_type_grants;
DELETE FROM idemgate.effect_type_policies;
SELECT idemgate.register_endpoint('nc_email', 'https://mail.example/send');
SELECT idemgate.set_effect_policy('nc_refund', requires_approval => true, actor => 'newcomer');
CREATE ROLE newcomer_puller;
SELECT idemgate.grant_effect_type('newcomer_puller', 'nc_crm');

SELECT outcome FROM idemgate.claim('newcomer-1', '{}', '1 hour', NULL, '00000000-0000-4000-8000-0000000000e1');
-- "nc_emial": a NOTICE naming the declared types; the effect is still enqueued.
SELECT cardinality(effect_ids) AS effects
  FROM idemgate.enqueue_effect('newcomer-1', '00000000-0000-4000-8000-0000000000e1', 0,
       '[{"type": "nc_emial", "target": "a@example.com", "payload": {}},
         {"type": "nc_emial", "target": "b@example.com", "payload": {}},
         {"type": "nc_crm", "target": "acme", "payload": {}}]');
SELECT effect_type, target FROM idemgate.outbox WHERE idempotency_key = 'newcomer-1' ORDER BY 2;
-- Declared types: no NOTICE.
SELECT outcome FROM idemgate.claim('newcomer-2', '{}', '1 hour', NULL, '00000000-0000-4000-8000-0000000000e2');
SELECT cardinality(effect_ids) AS effects
  FROM idemgate.enqueue_effect('newcomer-2', '00000000-0000-4000-8000-0000000000e2', 0,
       '[{"type": "nc_email", "target": "a@example.com", "payload": {}},
         {"type": "nc_crm", "target": "acme", "payload": {}}]');

-- grant_effect_type: a new name gets a NOTICE; one with pending effects
-- (nc_emial, just enqueued) or an endpoint does not.
SELECT idemgate.grant_effect_type('newcomer_puller', 'nc_crn');
SELECT idemgate.grant_effect_type('newcomer_puller', 'nc_emial');
SELECT idemgate.grant_effect_type('newcomer_puller', 'nc_email');
ROLLBACK;

-- A SCHEMA clause.
CREATE EXTENSION idemgate SCHEMA public;
-- The control file's schema, as pg_dump writes it, is not refused.
CREATE EXTENSION IF NOT EXISTS idemgate WITH SCHEMA pg_catalog;
-- IF NOT EXISTS on the installed extension does nothing, as before.
CREATE EXTENSION IF NOT EXISTS idemgate SCHEMA idemgate;

-- peek_approval given a request through the typed form.
SELECT * FROM idemgate.peek_approval('{"token": "abc"}');
SELECT * FROM idemgate.peek_approval(' {"token": "abc"}'::text);
-- The jsonb form and a plain unknown token behave as before.
SELECT status FROM idemgate.peek_approval('{"token": "abc"}'::jsonb);
SELECT count(*) FROM idemgate.peek_approval('abc');
RESET client_min_messages;
