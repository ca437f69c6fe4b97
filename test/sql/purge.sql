-- purge(older_than) deletes finished work only; purge_dead_letters(older_than)
-- is how open dead letters (full payloads) finally go.
--
-- Scripted in one transaction over empty tables, rolled back at the end, so
-- the dispatcher (which calls purge hourly) and other files never interfere.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
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

BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.watched_workflows IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.watched_workflows, idemgate.alert_state;

SELECT count(*) FROM (SELECT idemgate.claim('purge-' || k, '{"email": "ana@example.com"}', workflow => 'purge-wf')
  FROM unnest(ARRAY['done', 'rejected', 'open-dl', 'closed-dl', 'unknown', 'recent', 'working']) AS k) c;
-- done: delivered automatically.
SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('purge-done', pg_temp.owner_of('purge-done'),
  pg_temp.version_of('purge-done'), '{"type": "purge_mail", "target": "ana", "payload": {"body": "hi"}}');
SELECT pg_temp.deliver('purge_mail', NULL);
-- rejected: a human said no (an approval, no dead letter).
SELECT outcome FROM idemgate.consume_approval(
  (SELECT token FROM idemgate.request_approval('purge-rejected', pg_temp.owner_of('purge-rejected'),
     pg_temp.version_of('purge-rejected'), '{"type": "purge_mail", "target": "bob", "payload": {}}')),
  'reject', 'purge-approver');
-- open-dl: failed for good, its dead letter still waits for a person.
SELECT idemgate.fail('purge-open-dl', pg_temp.owner_of('purge-open-dl'), pg_temp.version_of('purge-open-dl'),
                     'model', 'no draft', false);
-- closed-dl: failed, reinjected, recovered by the next delivery, completed.
SELECT idemgate.fail('purge-closed-dl', pg_temp.owner_of('purge-closed-dl'), pg_temp.version_of('purge-closed-dl'),
                     'model', 'no draft', false);
SELECT idemgate.reinject(id, 'purge-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'purge-closed-dl';
SELECT outcome FROM idemgate.claim('purge-closed-dl', '{"email": "ana@example.com"}');
SELECT idemgate.cas_transition('purge-closed-dl', pg_temp.owner_of('purge-closed-dl'),
                               pg_temp.version_of('purge-closed-dl'), 'completed') > 0 AS completed;
-- unknown: its effect may or may not have been delivered; the run is then
-- set to failed_terminal by hand (as if an operator had failed it).
SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('purge-unknown', pg_temp.owner_of('purge-unknown'),
  pg_temp.version_of('purge-unknown'), '{"type": "purge_sms", "target": "ana", "payload": {}}');
SELECT pg_temp.deliver('purge_sms', 'timeout_after_send');
UPDATE idemgate.runs SET state = 'failed_terminal' WHERE idempotency_key = 'purge-unknown';
-- recent: completed just now. working: still processing.
SELECT idemgate.cas_transition('purge-recent', pg_temp.owner_of('purge-recent'),
                               pg_temp.version_of('purge-recent'), 'completed') > 0 AS completed;

-- Everything but recent was last changed two days ago.
UPDATE idemgate.runs SET updated_at = now() - interval '2 days' WHERE idempotency_key <> 'purge-recent';
SELECT idempotency_key, state,
       (SELECT count(*) FROM idemgate.events e WHERE e.idempotency_key = r.idempotency_key) AS events,
       (SELECT count(*) FROM idemgate.approvals a WHERE a.idempotency_key = r.idempotency_key) AS approvals,
       (SELECT string_agg(o.state, ',') FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key) AS effects,
       (SELECT string_agg(CASE WHEN d.reinjected_at IS NULL THEN 'open' ELSE 'reinjected' END, ',')
          FROM idemgate.dead_letters d WHERE d.idempotency_key = r.idempotency_key) AS dead_letters
  FROM idemgate.runs r ORDER BY 1;

-- purge('1 day') deletes done, rejected and closed-dl with everything that
-- belongs to them; keeps open-dl (open dead letter), unknown (unsettled
-- effect), recent (too young) and working (not finished).
SELECT idemgate.purge('1 day');
SELECT idempotency_key, state FROM idemgate.runs ORDER BY 1;
SELECT count(*) AS leftovers FROM (
  SELECT idempotency_key FROM idemgate.events UNION ALL SELECT idempotency_key FROM idemgate.approvals
  UNION ALL SELECT idempotency_key FROM idemgate.outbox UNION ALL SELECT idempotency_key FROM idemgate.dead_letters) x
 WHERE idempotency_key IN ('purge-done', 'purge-rejected', 'purge-closed-dl');
SELECT count(*) AS key_history FROM idemgate.key_history
 WHERE idempotency_key IN ('purge-done', 'purge-rejected', 'purge-closed-dl');
-- The purge is audited (counts only, no keys), and the dead letter of
-- open-dl is intact.
SELECT kind, actor IS NOT NULL AS has_actor, details FROM idemgate.events WHERE kind = 'purged';
SELECT payload, error_class FROM idemgate.dead_letters WHERE idempotency_key = 'purge-open-dl';
-- Nothing left to purge: 0, and that call is audited too.
SELECT idemgate.purge('1 day');
SELECT count(*) FROM idemgate.events WHERE kind = 'purged';
-- A longer bound keeps more: nothing is older than 3 days.
SELECT idemgate.purge('3 days');

-- Open dead letters stay until an operator purges them; then their run goes
-- with the next purge.
UPDATE idemgate.dead_letters SET dead_at = now() - interval '2 days';
SELECT idemgate.purge_dead_letters('3 days'), idemgate.purge_dead_letters('1 day');
SELECT kind, details FROM idemgate.events WHERE kind = 'dead_letters_purged' ORDER BY id;
SELECT idemgate.purge('1 day');
SELECT idempotency_key, state FROM idemgate.runs ORDER BY 1;
ROLLBACK;

-- Bad arguments.
SELECT a, pg_temp.sqlstate_of(q) FROM (VALUES
  ('purge NULL', 'SELECT idemgate.purge(NULL)'),
  ('purge 0', 'SELECT idemgate.purge(''0'')'),
  ('purge negative', 'SELECT idemgate.purge(''-1 day'')'),
  ('purge_dead_letters NULL', 'SELECT idemgate.purge_dead_letters(NULL)'),
  ('purge_dead_letters 0', 'SELECT idemgate.purge_dead_letters(''0 s'')')
) AS t(a, q);

-- Privileges: operators only.
CREATE ROLE purge_reader;
CREATE ROLE purge_operator;
SELECT idemgate.grant_role('purge_reader', 'reader');
SELECT idemgate.grant_role('purge_operator', 'operator');
SELECT r, has_function_privilege(r, 'idemgate.purge(interval)', 'EXECUTE') AS purge,
       has_function_privilege(r, 'idemgate.purge_dead_letters(interval)', 'EXECUTE') AS purge_dead_letters
  FROM (VALUES ('purge_reader'), ('purge_operator')) AS t(r);
SET ROLE purge_reader;
SELECT pg_temp.sqlstate_of('SELECT idemgate.purge(''1 day'')');
RESET ROLE;
SELECT idemgate.revoke_role('purge_reader', 'reader');
SELECT idemgate.revoke_role('purge_operator', 'operator');
DROP ROLE purge_reader;
DROP ROLE purge_operator;
