-- The claim's direct paths (src/ledger/claim_direct.c) write a new run, and the
-- event of a duplicate claim, without SQL; they run only on the shape of
-- idemgate.runs and idemgate.events the extension creates. A user who
-- changes either table (NOT NULL, a domain-typed column, another default,
-- a trigger, a unique index, row security, a rule) gets what the SQL
-- statement does on the changed table. Each case below makes the change,
-- claims through claim() and compares the stored rows, column by column
-- (to_jsonb of the whole row: added columns too), with the plain statement:
-- claim_lease() always runs the claim statement; the duplicate event's
-- statement (src/ledger/events.c) is run here as SQL. The decision is said at
-- DEBUG1 when a table is looked at again after a change, so the output
-- shows, for each case, that claims take the statement with the change
-- and write directly again once it is undone. pgTAP.
\i test/sql/include/pgtap.psql
SELECT * FROM no_plan();

-- No autovacuum or analyze of the two tables while this runs: each would
-- make the next claim look at the table again (and say so at DEBUG1).
ALTER TABLE idemgate.runs SET (autovacuum_enabled = off);
ALTER TABLE idemgate.events SET (autovacuum_enabled = off);

-- A run's row without its key and payload (claim_lease stores no payload).
CREATE FUNCTION pg_temp.run_row(k text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) - 'idempotency_key' - 'payload' FROM idemgate.runs r WHERE r.idempotency_key = k
$$;
-- The event rows of a key without their ids, oldest first.
CREATE FUNCTION pg_temp.event_rows(k text) RETURNS SETOF jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(e) - 'id' FROM idemgate.events e WHERE e.idempotency_key = k ORDER BY e.id
$$;
-- The duplicate event statement of src/ledger/events.c (RecordDuplicateEvent),
-- for a claim without an origin.
CREATE FUNCTION pg_temp.duplicate_statement(k text, actor text, workflow text, state text, version bigint)
RETURNS text LANGUAGE sql AS $$
  INSERT INTO idemgate.events (idempotency_key, kind, actor, details)
  VALUES (k, 'duplicate', actor, pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
    'workflow', workflow::text, 'state', state::text, 'version', version::bigint)))
  RETURNING kind
$$;
-- claim(k) and claim_lease(k2) with the same payload, owner and lease.
CREATE FUNCTION pg_temp.claim(k text) RETURNS text LANGUAGE sql AS $$
  SELECT outcome FROM idemgate.claim(k, '{"n": 1}', '7 minutes', NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')
$$;
CREATE FUNCTION pg_temp.claim_lease(k text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM idemgate.claim_lease(k, idemgate.hash_payload('{"n": 1}'),
                                            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '7 minutes')
$$;

-- The shape the extension creates: both direct paths (first look in this
-- session).
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-fast'), 'claimed', 'installed shape: claimed');
SELECT is(pg_temp.claim('csd-fast'), 'duplicate', 'installed shape: duplicate');
SET client_min_messages = warning;

-- 1. runs.workflow NOT NULL: a claim without a workflow is refused as the
-- statement refuses it (23502), not stored with a NULL workflow.
BEGIN;
DELETE FROM idemgate.runs WHERE workflow IS NULL;
ALTER TABLE idemgate.runs ALTER workflow SET NOT NULL;
SET LOCAL client_min_messages = debug1;
SELECT throws_ok($$SELECT pg_temp.claim('csd-1a')$$, '23502', NULL, 'NOT NULL workflow: claim refused');
SET LOCAL client_min_messages = warning;
SELECT throws_ok($$SELECT pg_temp.claim_lease('csd-1b')$$, '23502', NULL, 'NOT NULL workflow: the statement refuses it too');
SELECT is((SELECT outcome FROM idemgate.claim('csd-1c', '{}', '1 minute', 'csd-flow')), 'claimed',
          'NOT NULL workflow: a claim with a workflow is claimed');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-1-undone'), 'claimed', 'NOT NULL workflow undone: claimed directly');
SET client_min_messages = warning;

-- 2. events.actor NOT NULL: a duplicate claim without an actor is refused
-- (23502); one with an actor (supersede's operator) stores the
-- statement's row.
BEGIN;
SELECT is(pg_temp.claim('csd-2'), 'claimed', 'csd-2 claimed');
SELECT is(pg_temp.claim('csd-2-orig'), 'claimed', 'csd-2-orig claimed');
SELECT ok(idemgate.cas_transition('csd-2-orig', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 0, 'completed') IS NOT NULL,
          'csd-2-orig completed');
DELETE FROM idemgate.events WHERE actor IS NULL;
ALTER TABLE idemgate.events ALTER actor SET NOT NULL;
SET LOCAL client_min_messages = debug1;
SELECT throws_ok($$SELECT pg_temp.claim('csd-2')$$, '23502', NULL, 'NOT NULL actor: duplicate refused');
SET LOCAL client_min_messages = warning;
SELECT throws_ok($$SELECT pg_temp.duplicate_statement('csd-2', NULL, NULL, 'processing', 0)$$, '23502', NULL,
                 'NOT NULL actor: the statement refuses it too');
SELECT is((SELECT outcome FROM idemgate.supersede('csd-2-orig', 'csd-2', '{"n": 1}', 'ana', 'fix')), 'duplicate',
          'NOT NULL actor: supersede onto csd-2 is a duplicate');
SELECT is(pg_temp.duplicate_statement('csd-2', 'ana', NULL, 'processing', 0), 'duplicate', 'the statement''s event');
SELECT is((SELECT count(*) || ' rows, ' || count(DISTINCT e) || ' distinct, actor ' || min(e->>'actor')
             FROM pg_temp.event_rows('csd-2') e),
          '2 rows, 1 distinct, actor ana', 'NOT NULL actor: the duplicate event equals the statement''s');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-fast'), 'duplicate', 'NOT NULL actor undone: duplicate event written directly');
SET client_min_messages = warning;

-- 3. A column of a domain with a default (5), in both tables: the
-- statement writes 5, not NULL.
BEGIN;
CREATE DOMAIN public.csd_five AS integer DEFAULT 5;
ALTER TABLE idemgate.runs ADD COLUMN csd_five public.csd_five;
ALTER TABLE idemgate.events ADD COLUMN csd_five public.csd_five;
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-3a'), 'claimed', 'domain default: claimed');
SELECT is(pg_temp.claim('csd-3a'), 'duplicate', 'domain default: duplicate');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim_lease('csd-3b'), 1::bigint, 'domain default: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-3a'), pg_temp.run_row('csd-3b'), 'domain default: the run row equals the statement''s');
SELECT is(pg_temp.run_row('csd-3a')->'csd_five', '5', 'domain default: 5 in the run');
SELECT is(pg_temp.duplicate_statement('csd-3a', NULL, NULL, 'processing', 0), 'duplicate', 'the statement''s event');
SELECT is((SELECT count(*) || ' rows, ' || count(DISTINCT e) || ' distinct, csd_five ' || min(e->>'csd_five')
             FROM pg_temp.event_rows('csd-3a') e),
          '2 rows, 1 distinct, csd_five 5', 'domain default: the duplicate event equals the statement''s');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-3-undone'), 'claimed', 'domain default undone: claimed directly');
SELECT is(pg_temp.claim('csd-3-undone'), 'duplicate', 'domain default undone: duplicate event written directly');
SET client_min_messages = warning;

-- 4. A column of a domain that is NOT NULL (added while runs is empty).
BEGIN;
DELETE FROM idemgate.runs;
CREATE DOMAIN public.csd_nn AS integer NOT NULL;
ALTER TABLE idemgate.runs ADD COLUMN csd_nn public.csd_nn;
SET LOCAL client_min_messages = debug1;
SELECT throws_ok($$SELECT pg_temp.claim('csd-4a')$$, '23502', NULL, 'domain NOT NULL: claim refused');
SET LOCAL client_min_messages = warning;
SELECT throws_ok($$SELECT pg_temp.claim_lease('csd-4b')$$, '23502', NULL, 'domain NOT NULL: the statement refuses it too');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-4-undone'), 'claimed', 'domain NOT NULL undone: claimed directly');
SET client_min_messages = warning;

-- 4b. A domain's CHECK added after the table was looked at: ALTER DOMAIN
-- leaves the table's relcache entry as it was, so a domain-typed column
-- sends claims to the statement whatever the domain said then.
BEGIN;
CREATE DOMAIN public.csd_small AS integer DEFAULT 1;
ALTER TABLE idemgate.runs ADD COLUMN csd_small public.csd_small;
SELECT is(pg_temp.claim('csd-4c'), 'claimed', 'domain without constraint: claimed');
SELECT is(pg_temp.claim_lease('csd-4d'), 1::bigint, 'domain without constraint: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-4c'), pg_temp.run_row('csd-4d'), 'domain without constraint: the same row');
ALTER DOMAIN public.csd_small ADD CONSTRAINT csd_big CHECK (VALUE > 3) NOT VALID;
SELECT throws_ok($$SELECT pg_temp.claim('csd-4e')$$, '23514', NULL, 'domain CHECK added: claim refused');
SELECT throws_ok($$SELECT pg_temp.claim_lease('csd-4f')$$, '23514', NULL, 'domain CHECK added: the statement refuses it too');
ROLLBACK;

-- 5. Other defaults for the columns the statements do not name.
BEGIN;
ALTER TABLE idemgate.runs ALTER failures SET DEFAULT 3, ALTER validations SET DEFAULT 2,
  ALTER created_at SET DEFAULT pg_catalog.now() - interval '1 day';
ALTER TABLE idemgate.events ALTER at SET DEFAULT pg_catalog.now() - interval '1 hour';
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-5a'), 'claimed', 'changed defaults: claimed');
SELECT is(pg_temp.claim('csd-5a'), 'duplicate', 'changed defaults: duplicate');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim_lease('csd-5b'), 1::bigint, 'changed defaults: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-5a'), pg_temp.run_row('csd-5b'), 'changed defaults: the run row equals the statement''s');
SELECT is((SELECT failures || ' ' || validations || ' ' || (created_at = now() - interval '1 day')
             FROM idemgate.runs WHERE idempotency_key = 'csd-5a'),
          '3 2 true', 'changed defaults: applied to the run');
SELECT is(pg_temp.duplicate_statement('csd-5a', NULL, NULL, 'processing', 0), 'duplicate', 'the statement''s event');
SELECT is((SELECT count(*) || ' rows, ' || count(DISTINCT e) || ' distinct, '
                 || bool_and((e->>'at')::timestamptz = now() - interval '1 hour')
             FROM pg_temp.event_rows('csd-5a') e),
          '2 rows, 1 distinct, true', 'changed defaults: the duplicate event equals the statement''s');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-5-undone'), 'claimed', 'changed defaults undone: claimed directly');
SELECT is(pg_temp.claim('csd-5-undone'), 'duplicate', 'changed defaults undone: duplicate event written directly');
SET client_min_messages = warning;

-- 6. A statement-level AFTER UPDATE trigger on runs: INSERT ... ON CONFLICT
-- DO UPDATE fires it once per claim, new key or not. Committed, then
-- dropped.
CREATE TABLE public.csd_fired (n serial, via text);
CREATE FUNCTION public.csd_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.csd_fired (via) VALUES (current_setting('csd.via', true));
  RETURN NULL;
END $$;
CREATE TRIGGER csd_after_update AFTER UPDATE ON idemgate.runs FOR EACH STATEMENT EXECUTE FUNCTION public.csd_count();
BEGIN;
SET LOCAL csd.via = 'claim';
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-6a'), 'claimed', 'statement trigger: claimed');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim('csd-6a'), 'duplicate', 'statement trigger: duplicate');
SET LOCAL csd.via = 'statement';
SELECT is(pg_temp.claim_lease('csd-6b'), 1::bigint, 'statement trigger: claim_lease claimed');
SELECT is(pg_temp.claim_lease('csd-6b'), 0::bigint, 'statement trigger: claim_lease of a held key');
SELECT results_eq($$SELECT via, count(*) FROM public.csd_fired GROUP BY via ORDER BY via$$,
                  $$VALUES ('claim', 2::bigint), ('statement', 2::bigint)$$,
                  'statement trigger: fired by each claim as by each statement');
SELECT is(pg_temp.run_row('csd-6a'), pg_temp.run_row('csd-6b'), 'statement trigger: the run row equals the statement''s');
ROLLBACK;
DROP TRIGGER csd_after_update ON idemgate.runs;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-6-undone'), 'claimed', 'statement trigger dropped: claimed directly');
SET client_min_messages = warning;
SELECT is((SELECT count(*) FROM public.csd_fired), 0::bigint, 'statement trigger dropped: not fired');
DROP TABLE public.csd_fired;
DROP FUNCTION public.csd_count();

-- 7. A user's second unique index on idempotency_key: the statement's ON
-- CONFLICT takes it as an arbiter too (concurrent claims of one new key:
-- test/t/131_claim_unique_index_race.pl). Committed, then dropped. A plain
-- index, with an expression and a predicate, does not change the rows:
-- claims still write directly, and the index gets its entries.
CREATE UNIQUE INDEX csd_key_unique ON idemgate.runs (idempotency_key);
BEGIN;
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-7a'), 'claimed', 'unique index: claimed');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim('csd-7a'), 'duplicate', 'unique index: duplicate');
SELECT is(pg_temp.claim_lease('csd-7b'), 1::bigint, 'unique index: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-7a'), pg_temp.run_row('csd-7b'), 'unique index: the run row equals the statement''s');
ROLLBACK;
DROP INDEX idemgate.csd_key_unique;
CREATE INDEX csd_key_lower ON idemgate.runs (pg_catalog.lower(idempotency_key))
  WHERE idempotency_key LIKE 'csd-%';
BEGIN;
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-7c'), 'claimed', 'plain index: claimed directly');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim_lease('csd-7d'), 1::bigint, 'plain index: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-7c'), pg_temp.run_row('csd-7d'), 'plain index: the run row equals the statement''s');
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT is((SELECT count(*) FROM idemgate.runs WHERE pg_catalog.lower(idempotency_key) IN ('csd-7c', 'csd-7d')
             AND idempotency_key LIKE 'csd-%'),
          2::bigint, 'plain index: both rows found through it');
ROLLBACK;
DROP INDEX idemgate.csd_key_lower;

-- 8. Row security on runs.
BEGIN;
ALTER TABLE idemgate.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY csd_policy ON idemgate.runs USING (true);
SET LOCAL client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-8a'), 'claimed', 'row security: claimed');
SET LOCAL client_min_messages = warning;
SELECT is(pg_temp.claim_lease('csd-8b'), 1::bigint, 'row security: claim_lease claimed');
SELECT is(pg_temp.run_row('csd-8a'), pg_temp.run_row('csd-8b'), 'row security: the run row equals the statement''s');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-8-undone'), 'claimed', 'row security undone: claimed directly');
SET client_min_messages = warning;

-- 9. A rule on runs: the statement refuses ON CONFLICT on a table with
-- INSERT rules (0A000), so claim() does too.
BEGIN;
CREATE RULE csd_rule AS ON INSERT TO idemgate.runs DO ALSO NOTIFY csd_rule;
SET LOCAL client_min_messages = debug1;
SELECT throws_ok($$SELECT pg_temp.claim('csd-9a')$$, '0A000', NULL, 'rule: claim refused');
SET LOCAL client_min_messages = warning;
SELECT throws_ok($$SELECT pg_temp.claim_lease('csd-9b')$$, '0A000', NULL, 'rule: the statement refuses it too');
ROLLBACK;
SET client_min_messages = debug1;
SELECT is(pg_temp.claim('csd-9-undone'), 'claimed', 'rule undone: claimed directly');
SET client_min_messages = warning;

DELETE FROM idemgate.events WHERE idempotency_key LIKE 'csd-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'csd-%';
ALTER TABLE idemgate.runs RESET (autovacuum_enabled);
ALTER TABLE idemgate.events RESET (autovacuum_enabled);

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
