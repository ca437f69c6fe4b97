-- A claim on a new key inserts the run row without SQL (src/ledger/claim_direct.c,
-- bench/README.md); any other claim runs the claim statement. This file shows that
-- the new-key path writes exactly the row the statement writes (compared
-- with claim_lease, which always runs the statement), with its index
-- entries, visible to the rest of the transaction, and that it gives way
-- to the statement when the table is not the one it was written for: a
-- column added later (its default is still applied) or an insert trigger
-- (it still fires). The same for a duplicate claim, which locks and reads
-- the run and writes its event row without SQL. pgTAP.
\i test/sql/include/pgtap.psql
SELECT * FROM no_plan();

BEGIN;
-- The same owner, payload and lease through claim (new-key path) and
-- claim_lease (the statement), in one transaction: one now().
SELECT is((SELECT outcome || ' ' || state || ' ' || version || ' ' || (result IS NULL)
             FROM idemgate.claim('cp-fast', '{"b": [1, 2], "a": "x"}', '7 minutes', NULL,
                                 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')),
          'claimed processing 0 true', 'new key: claimed, processing, version 0, no result');
SELECT is((SELECT count(*) FROM idemgate.claim_lease('cp-stmt', idemgate.hash_payload('{"a": "x", "b": [1, 2]}'),
                                                      'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '7 minutes')),
          1::bigint, 'claim_lease claimed cp-stmt');
SELECT results_eq(
  $$SELECT workflow, state, payload_hash, lease_owner, lease_expires_at, lease_started_at, version,
           failures, result, replaces_key, created_at, updated_at, validations
      FROM idemgate.runs WHERE idempotency_key = 'cp-fast'$$,
  $$SELECT workflow, state, payload_hash, lease_owner, lease_expires_at, lease_started_at, version,
           failures, result, replaces_key, created_at, updated_at, validations
      FROM idemgate.runs WHERE idempotency_key = 'cp-stmt'$$,
  'the new-key row equals the statement''s row in every column but key and payload');
SELECT results_eq(
  $$SELECT payload, payload_hash, lease_expires_at - lease_started_at, created_at
      FROM idemgate.runs WHERE idempotency_key = 'cp-fast'$$,
  $$SELECT '{"a": "x", "b": [1, 2]}'::jsonb, sha256(convert_to('{"a": "x", "b": [1, 2]}', 'UTF8')),
           interval '7 minutes', now()$$,
  'payload stored, hashed as sha256 of its text, lease from now()');

-- Its index entries: found through the primary key and the workflow index.
SELECT is((SELECT outcome FROM idemgate.claim('cp-wf', '{}', '1 minute', 'cp-flow')), 'claimed', 'cp-wf claimed');
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT is((SELECT count(*) FROM idemgate.runs WHERE workflow = 'cp-flow'), 1::bigint,
          'found through runs_workflow_created_idx');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key IN ('cp-fast', 'cp-wf')), 2::bigint,
          'found through runs_pkey');
RESET enable_seqscan;
RESET enable_bitmapscan;

-- The rest of the transaction sees the run: a second claim is a duplicate,
-- the owner completes it.
SELECT is((SELECT outcome || ' ' || state || ' ' || version FROM idemgate.claim('cp-fast', '{"a": "x", "b": [1, 2]}')),
          'duplicate processing 0', 'claimed again in the same transaction: duplicate');
SELECT throws_ok($$SELECT * FROM idemgate.claim('cp-fast', '{"a": "y"}')$$, 'IG001', NULL,
                 'another payload in the same transaction: IG001');
SELECT is(idemgate.cas_transition('cp-fast', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 0, 'completed'), 1::bigint,
          'the owner completes it');
ROLLBACK;

-- A column added later: a constant default is written by the new-key path,
-- any other default by the statement; both are applied.
BEGIN;
ALTER TABLE idemgate.runs ADD COLUMN cp_note text NOT NULL DEFAULT 'none';
SELECT is((SELECT outcome FROM idemgate.claim('cp-note', '{}')), 'claimed', 'claimed with a constant-default column');
SELECT is((SELECT cp_note FROM idemgate.runs WHERE idempotency_key = 'cp-note'), 'none', 'constant default applied');
ALTER TABLE idemgate.runs ADD COLUMN cp_stamp text NOT NULL DEFAULT pg_catalog.md5(pg_catalog.random()::text);
SELECT is((SELECT outcome FROM idemgate.claim('cp-stamp', '{}')), 'claimed', 'claimed with a volatile-default column');
SELECT is((SELECT length(cp_stamp) FROM idemgate.runs WHERE idempotency_key = 'cp-stamp'), 32, 'volatile default applied');
ROLLBACK;

-- An insert trigger on runs fires for a claim.
BEGIN;
CREATE FUNCTION public.cp_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.workflow := 'marked by trigger';
  RETURN NEW;
END $$;
CREATE TRIGGER cp_mark BEFORE INSERT ON idemgate.runs FOR EACH ROW EXECUTE FUNCTION public.cp_mark();
SELECT is((SELECT outcome FROM idemgate.claim('cp-trig', '{}')), 'claimed', 'claimed with an insert trigger');
SELECT is((SELECT workflow FROM idemgate.runs WHERE idempotency_key = 'cp-trig'), 'marked by trigger', 'the trigger fired');
ROLLBACK;

-- A duplicate claim writes its event row without SQL too: the same kind,
-- key, actor and details as the statement (workflow only when the run has
-- one; the actor is supersede's operator), at now().
BEGIN;
SELECT is((SELECT outcome FROM idemgate.claim('cp-dup1', '{"n": 1}', '1 minute', 'cp-flow')), 'claimed', 'cp-dup1 claimed');
SELECT is((SELECT outcome FROM idemgate.claim('cp-dup2', '{"n": 2}')), 'claimed', 'cp-dup2 claimed');
SELECT is((SELECT outcome FROM idemgate.claim('cp-orig', '{}')), 'claimed', 'cp-orig claimed');
SELECT ok(idemgate.cas_transition('cp-orig', (SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = 'cp-orig'),
                                  0, 'completed', '{"done": true}') IS NOT NULL, 'cp-orig completed');
SELECT results_eq(
  $$SELECT outcome, idempotency_key, state, lease_owner, version, result
      FROM idemgate.claim('cp-dup1', '{"n": 1}')
    UNION ALL SELECT * FROM idemgate.claim('cp-dup2', '{"n": 2}')
    UNION ALL SELECT * FROM idemgate.claim('cp-orig', '{}')
    UNION ALL SELECT * FROM idemgate.supersede('cp-orig', 'cp-dup2', '{"n": 2}', 'ana', 'fix')$$,
  $$VALUES ('duplicate', 'cp-dup1', 'processing', NULL::uuid, 0::bigint, NULL::jsonb),
           ('duplicate', 'cp-dup2', 'processing', NULL, 0, NULL),
           ('duplicate', 'cp-orig', 'completed', NULL, 1, '{"done": true}'),
           ('duplicate', 'cp-dup2', 'processing', NULL, 0, NULL)$$,
  'duplicates: state, version and result of the run, no owner');
SELECT results_eq(
  $$SELECT idempotency_key, kind, actor, details, at = now(), effect_id IS NULL
      FROM idemgate.events WHERE idempotency_key LIKE 'cp-%' AND kind = 'duplicate' ORDER BY id$$,
  $$VALUES ('cp-dup1', 'duplicate', NULL::text, '{"state": "processing", "version": 0, "workflow": "cp-flow"}'::jsonb, true, true),
           ('cp-dup2', 'duplicate', NULL, '{"state": "processing", "version": 0}', true, true),
           ('cp-orig', 'duplicate', NULL, '{"state": "completed", "version": 1}', true, true),
           ('cp-dup2', 'duplicate', 'ana', '{"state": "processing", "version": 0}', true, true)$$,
  'duplicate events as the statement writes them');
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM idemgate.events WHERE kind = 'duplicate' AND details->>'workflow' = 'cp-flow'),
          1::bigint, 'the event is in the workflow index');
RESET enable_seqscan;
-- An insert trigger on events fires for a duplicate claim.
CREATE FUNCTION public.cp_mark_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.actor := 'marked by trigger';
  RETURN NEW;
END $$;
CREATE TRIGGER cp_mark_event BEFORE INSERT ON idemgate.events FOR EACH ROW EXECUTE FUNCTION public.cp_mark_event();
SELECT is((SELECT outcome FROM idemgate.claim('cp-dup1', '{"n": 1}')), 'duplicate', 'duplicate with an events trigger');
SELECT is((SELECT actor FROM idemgate.events WHERE idempotency_key = 'cp-dup1' ORDER BY id DESC LIMIT 1),
          'marked by trigger', 'the events trigger fired');
ROLLBACK;

-- In REPEATABLE READ a key that exists goes through the statement: the
-- same outcomes.
SELECT is((SELECT outcome FROM idemgate.claim('cp-rr', '{}')), 'claimed', 'cp-rr claimed');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT is((SELECT outcome || ' ' || state || ' ' || version FROM idemgate.claim('cp-rr', '{}')),
          'duplicate processing 0', 'repeatable read: duplicate');
SELECT throws_ok($$SELECT * FROM idemgate.claim('cp-rr', '{"other": 1}')$$, 'IG001', NULL,
                 'repeatable read: another payload is IG001');
SELECT is((SELECT outcome FROM idemgate.claim('cp-rr-new', '{}')), 'claimed', 'repeatable read: a new key is claimed');
ROLLBACK;
DELETE FROM idemgate.events WHERE idempotency_key = 'cp-rr';
DELETE FROM idemgate.outbox WHERE idempotency_key = 'cp-rr';
DELETE FROM idemgate.approvals WHERE idempotency_key = 'cp-rr';
DELETE FROM idemgate.runs WHERE idempotency_key = 'cp-rr';

-- A read-only transaction writes nothing: the statement's error.
BEGIN READ ONLY;
SELECT throws_ok($$SELECT * FROM idemgate.claim('cp-ro', '{}')$$, '25006', NULL,
                 'read-only transaction: claim refused');
ROLLBACK;

SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'cp-%'), 0::bigint, 'nothing left behind');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
