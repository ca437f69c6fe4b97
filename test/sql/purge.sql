-- purge(older_than) deletes finished work only; purge_dead_letters(older_than)
-- is how open dead letters (full payloads) finally go.
--
-- Scripted in one transaction over empty tables, rolled back at the end
-- (pgTAP and the test roles too), so the dispatcher (which calls purge
-- hourly) and other files never interfere. pgTAP.
\i test/sql/include/quiet.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
-- owner_of and version_of return a run's live owner and version.
CREATE FUNCTION pg_temp.owner_of(k text) RETURNS uuid LANGUAGE sql AS
$$ SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k $$;
CREATE FUNCTION pg_temp.version_of(k text) RETURNS bigint LANGUAGE sql AS
$$ SELECT version FROM idemgate.runs WHERE idempotency_key = k $$;
-- deliver claims the due effect of type t and completes it (err NULL) or
-- fails it with class err.
CREATE FUNCTION pg_temp.deliver(t text, err text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim_effects(t, 1, '1 minute');
  IF err IS NULL THEN RETURN idemgate.complete_effect(c.effect_id, c.lease_owner)::text; END IF;
  RETURN idemgate.fail_effect(c.effect_id, c.lease_owner, err, 'scripted');
END $$;
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

SELECT is((SELECT count(*) FROM (SELECT idemgate.claim('purge-' || k, '{"email": "ana@example.com"}', workflow => 'purge-wf')
             FROM unnest(ARRAY['done', 'rejected', 'open-dl', 'closed-dl', 'unknown', 'recent', 'working']) AS k) c),
          7::bigint, 'seven runs claimed');
-- done: delivered automatically.
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('purge-done', pg_temp.owner_of('purge-done'),
             pg_temp.version_of('purge-done'), '{"type": "purge_mail", "target": "ana", "payload": {"body": "hi"}}')),
          1, 'done: one effect');
SELECT is(pg_temp.deliver('purge_mail', NULL), 'true', 'done: delivered');
-- rejected: a human said no (an approval, no dead letter).
SELECT is((SELECT outcome FROM idemgate.consume_approval(
             (SELECT token FROM idemgate.request_approval('purge-rejected', pg_temp.owner_of('purge-rejected'),
                pg_temp.version_of('purge-rejected'), '{"type": "purge_mail", "target": "bob", "payload": {}}')),
             'reject', 'purge-approver')), 'rejected', 'rejected: a human said no');
-- open-dl: failed for good, its dead letter still waits for a person.
SELECT is(idemgate.fail('purge-open-dl', pg_temp.owner_of('purge-open-dl'), pg_temp.version_of('purge-open-dl'),
                        'model', 'no draft', false), 'failed_terminal', 'open-dl: failed for good');
-- closed-dl: failed, reinjected, recovered by the next delivery, completed.
SELECT is(idemgate.fail('purge-closed-dl', pg_temp.owner_of('purge-closed-dl'), pg_temp.version_of('purge-closed-dl'),
                        'model', 'no draft', false), 'failed_terminal', 'closed-dl: failed');
SELECT is((SELECT idemgate.reinject(id, 'purge-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'purge-closed-dl'),
          true, 'closed-dl: reinjected');
SELECT is((SELECT outcome FROM idemgate.claim('purge-closed-dl', '{"email": "ana@example.com"}')), 'recovered', 'closed-dl: recovered');
SELECT ok(idemgate.cas_transition('purge-closed-dl', pg_temp.owner_of('purge-closed-dl'),
                                  pg_temp.version_of('purge-closed-dl'), 'completed') > 0, 'closed-dl: completed');
-- unknown: its effect may or may not have been delivered; the run is then
-- set to failed_terminal by hand (as if an operator had failed it).
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('purge-unknown', pg_temp.owner_of('purge-unknown'),
             pg_temp.version_of('purge-unknown'), '{"type": "purge_sms", "target": "ana", "payload": {}}')),
          1, 'unknown: one effect');
SELECT is(pg_temp.deliver('purge_sms', 'timeout_after_send'), 'unknown', 'unknown: its effect is unknown');
UPDATE idemgate.runs SET state = 'failed_terminal' WHERE idempotency_key = 'purge-unknown';
-- recent: completed just now. working: still processing.
SELECT ok(idemgate.cas_transition('purge-recent', pg_temp.owner_of('purge-recent'),
                                  pg_temp.version_of('purge-recent'), 'completed') > 0, 'recent: completed');

-- Everything but recent was last changed two days ago.
UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '3 days'
 WHERE idempotency_key <> 'purge-recent';
SELECT results_eq($$SELECT idempotency_key, state,
                           (SELECT count(*) FROM idemgate.events e WHERE e.idempotency_key = r.idempotency_key),
                           (SELECT count(*) FROM idemgate.approvals a WHERE a.idempotency_key = r.idempotency_key),
                           (SELECT string_agg(o.state, ',') FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key),
                           (SELECT string_agg(CASE WHEN d.reinjected_at IS NULL THEN 'open' ELSE 'reinjected' END, ',')
                              FROM idemgate.dead_letters d WHERE d.idempotency_key = r.idempotency_key)
                      FROM idemgate.runs r ORDER BY 1$$,
                  $$VALUES ('purge-closed-dl', 'completed', 5::bigint, 0::bigint, NULL::text, 'reinjected'),
                           ('purge-done', 'completed', 1, 0, 'completed', NULL),  -- its delivery and completion are in the rows
                           ('purge-open-dl', 'failed_terminal', 2, 0, NULL, 'open'),
                           ('purge-recent', 'completed', 1, 0, NULL, NULL),
                           ('purge-rejected', 'failed_terminal', 2, 1, NULL, NULL),
                           ('purge-unknown', 'failed_terminal', 2, 0, 'unknown', NULL),
                           ('purge-working', 'processing', 0, 0, NULL, NULL)$$,
                  'the runs and what belongs to them');

-- purge('1 day') deletes done, rejected and closed-dl with everything that
-- belongs to them; keeps open-dl (open dead letter), unknown (unsettled
-- effect), recent (too young) and working (not finished).
SELECT is(idemgate.purge('1 day'), 3::bigint, 'purge deletes three runs');
SELECT results_eq($$SELECT idempotency_key, state FROM idemgate.runs ORDER BY 1$$,
                  $$VALUES ('purge-open-dl', 'failed_terminal'), ('purge-recent', 'completed'),
                           ('purge-unknown', 'failed_terminal'), ('purge-working', 'processing')$$,
                  'open-dl, recent, unknown and working are kept');
SELECT is_empty($$SELECT idempotency_key FROM (
                     SELECT idempotency_key FROM idemgate.events UNION ALL SELECT idempotency_key FROM idemgate.approvals
                     UNION ALL SELECT idempotency_key FROM idemgate.outbox UNION ALL SELECT idempotency_key FROM idemgate.dead_letters) x
                   WHERE idempotency_key IN ('purge-done', 'purge-rejected', 'purge-closed-dl')$$,
                'nothing of the purged runs is left');
SELECT is_empty($$SELECT * FROM idemgate.key_history
                   WHERE idempotency_key IN ('purge-done', 'purge-rejected', 'purge-closed-dl')$$, 'nor in key_history');
-- The purge is audited (counts only, no keys), and the dead letter of
-- open-dl is intact.
SELECT results_eq($$SELECT kind, actor IS NOT NULL, details FROM idemgate.events WHERE kind = 'purged'$$,
                  $$VALUES ('purged', true, '{"runs": 3, "events": 8, "effects": 1, "approvals": 1, "older_than": "@ 1 day",
                                              "dead_letters": 1}'::jsonb)$$,
                  'the purge is audited with counts only');
SELECT results_eq($$SELECT payload, error_class FROM idemgate.dead_letters WHERE idempotency_key = 'purge-open-dl'$$,
                  $$VALUES ('{"email": "ana@example.com"}'::jsonb, 'model')$$, 'the open dead letter is intact');
-- Nothing left to purge: 0, and that call is audited too.
SELECT is(idemgate.purge('1 day'), 0::bigint, 'nothing left to purge');
SELECT is((SELECT count(*) FROM idemgate.events WHERE kind = 'purged'), 2::bigint, 'that call is audited too');
-- A longer bound keeps more: nothing is older than 3 days.
SELECT is(idemgate.purge('3 days'), 0::bigint, 'nothing is older than 3 days');

-- Open dead letters stay until an operator purges them; then their run goes
-- with the next purge.
UPDATE idemgate.dead_letters SET dead_at = now() - interval '2 days';
SELECT results_eq($$SELECT idemgate.purge_dead_letters('3 days'), idemgate.purge_dead_letters('1 day')$$,
                  $$VALUES (0::bigint, 1::bigint)$$, 'purge_dead_letters: none older than 3 days, one older than 1 day');
SELECT results_eq($$SELECT kind, details FROM idemgate.events WHERE kind = 'dead_letters_purged' ORDER BY id$$,
                  $$VALUES ('dead_letters_purged', '{"older_than": "@ 3 days", "dead_letters": 0}'::jsonb),
                           ('dead_letters_purged', '{"older_than": "@ 1 day", "dead_letters": 1}'::jsonb)$$,
                  'both calls audited');
SELECT is(idemgate.purge('1 day'), 1::bigint, 'then open-dl goes with the next purge');
SELECT results_eq($$SELECT idempotency_key, state FROM idemgate.runs ORDER BY 1$$,
                  $$VALUES ('purge-recent', 'completed'), ('purge-unknown', 'failed_terminal'), ('purge-working', 'processing')$$,
                  'recent, unknown and working are left');

-- Bad arguments.
SELECT throws_ok(q, code, m, a) FROM (VALUES
  ('purge NULL', 'SELECT idemgate.purge(NULL)', '22004', 'argument "older_than" must not be NULL'),
  ('purge 0', 'SELECT idemgate.purge(''0'')', '22023', 'argument "older_than" must be greater than 0 s and at most 3153600000 s'),
  ('purge negative', 'SELECT idemgate.purge(''-1 day'')', '22023', 'argument "older_than" must be greater than 0 s and at most 3153600000 s'),
  ('purge_dead_letters NULL', 'SELECT idemgate.purge_dead_letters(NULL)', '22004', 'argument "older_than" must not be NULL'),
  ('purge_dead_letters 0', 'SELECT idemgate.purge_dead_letters(''0 s'')', '22023',
   'argument "older_than" must be greater than 0 s and at most 3153600000 s')
) AS t(a, q, code, m);

-- Privileges: operators only.
CREATE ROLE purge_reader;
CREATE ROLE purge_operator;
SELECT idemgate.grant_role('purge_reader', 'reader'), idemgate.grant_role('purge_operator', 'operator') \g /dev/null
SELECT function_privs_are('idemgate', f, ARRAY['interval'], r, p, r || ' on ' || f) FROM (VALUES
  ('purge_reader', 'purge', ARRAY[]::text[]), ('purge_reader', 'purge_dead_letters', ARRAY[]::text[]),
  ('purge_operator', 'purge', ARRAY['EXECUTE']), ('purge_operator', 'purge_dead_letters', ARRAY['EXECUTE'])
) AS t(r, f, p);
SELECT throws_ok($$SELECT pg_temp.as_role('purge_reader', 'SELECT idemgate.purge(''1 day'')')$$, '42501',
                 'permission denied for function purge', 'a reader may not purge');

SELECT * FROM finish();
ROLLBACK;
