-- The failure paths of the promise (docs/outbox.md, "What a failure does",
-- "Completing a run"; docs/operations.md, "Retention"):
--   - lost_after_send is a class of its own: unknown for an endpoint that
--     cannot dedupe, pending + backoff for one that honours the key;
--   - a run whose effects are all settled with one failed ends
--     failed_terminal at once (event naming the failed effect,
--     terminal_failure alert by key, a duplicate claim answers with that
--     state); reinjecting the effect's dead letter brings it back to
--     approved, and it completes with its effect;
--   - purge keeps a tombstone: a late duplicate is duplicate/purged, a
--     changed payload IG001, never claimed; purge_tombstones forgets them.
-- Scripted in one transaction over empty tables, rolled back at the end.
\i test/sql/include/quiet.psql
BEGIN;
SET LOCAL deadlock_timeout = '60s';
LOCK TABLE idemgate.alert_state, idemgate.outbox, idemgate.approvals, idemgate.runs,
           idemgate.events, idemgate.dead_letters, idemgate.tombstones IN ACCESS EXCLUSIVE MODE;
TRUNCATE idemgate.outbox, idemgate.approvals, idemgate.runs, idemgate.events,
         idemgate.dead_letters, idemgate.alert_state, idemgate.tombstones;
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
SET LOCAL search_path = tap, public;
CREATE FUNCTION pg_temp.owner_of(k text) RETURNS uuid LANGUAGE sql AS
$$ SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k $$;
CREATE FUNCTION pg_temp.version_of(k text) RETURNS bigint LANGUAGE sql AS
$$ SELECT version FROM idemgate.runs WHERE idempotency_key = k $$;
-- enqueue claims key k and enqueues one effect of type t.
CREATE FUNCTION pg_temp.enqueue(k text, t text, target text DEFAULT 'x') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idemgate.claim(k, '{"n": 1}', workflow => 'fp-wf');
  PERFORM idemgate.enqueue_effect(k, pg_temp.owner_of(k), pg_temp.version_of(k),
            jsonb_build_object('type', t, 'target', target, 'payload', jsonb_build_object('to', target)));
END $$;
-- deliver claims the due effect of type t and completes it (err NULL) or
-- fails it with class err; returns the effect's new state.
CREATE FUNCTION pg_temp.deliver(t text, err text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim_effects(t, 1, '1 minute');
  IF c.effect_id IS NULL THEN RETURN 'nothing due'; END IF;
  IF err IS NULL THEN PERFORM idemgate.complete_effect(c.effect_id, c.lease_owner); RETURN 'completed'; END IF;
  RETURN idemgate.fail_effect(c.effect_id, c.lease_owner, err, 'scripted');
END $$;
SELECT * FROM no_plan();

-- lost_after_send: the request went out, the answer did not come back.
SELECT lives_ok($$SELECT idemgate.register_endpoint('fp_plain', 'https://example.com/x', '5 seconds', 3, false)$$, 'plain endpoint');
SELECT lives_ok($$SELECT idemgate.register_endpoint('fp_idem', 'https://example.com/y', '5 seconds', 3, true)$$, 'idempotent endpoint');
SELECT pg_temp.enqueue('fp-lost-1', 'fp_plain');
SELECT pg_temp.enqueue('fp-lost-2', 'fp_idem');
SELECT is(pg_temp.deliver('fp_plain', 'lost_after_send'), 'unknown', 'lost_after_send without the key: unknown, never resent');
SELECT is(pg_temp.deliver('fp_idem', 'lost_after_send'), 'pending', 'lost_after_send with the key: pending + backoff');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-lost-1'), 'approved', 'an unknown effect keeps its run approved');

-- A run whose only effect the provider refused ends failed_terminal.
SELECT pg_temp.enqueue('fp-refused', 'fp_refused');
SELECT is(pg_temp.deliver('fp_refused', 'rejected'), 'failed', 'the provider refused the effect');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-refused'), 'failed_terminal',
          'its run ended failed_terminal in the same transaction');
SELECT is((SELECT details->'failed_effects' FROM idemgate.events
            WHERE idempotency_key = 'fp-refused' AND kind = 'state_changed' AND details->>'to' = 'failed_terminal'),
          (SELECT jsonb_build_array(effect_id) FROM idemgate.outbox WHERE idempotency_key = 'fp-refused'),
          'its state_changed event names the failed effect');
SELECT is((SELECT outcome || '/' || state FROM idemgate.claim('fp-refused', '{"n": 1}')), 'duplicate/failed_terminal',
          'a redelivery is told the run failed for good, not that it is in progress');
SELECT is((SELECT count(*) FROM idemgate.alerts WHERE alert = 'terminal_failure' AND message LIKE '%fp-refused%'), 1::bigint,
          'terminal_failure fires at once, naming the key');
-- Two effects: the run waits for the second, then fails.
SELECT is((SELECT outcome FROM idemgate.claim('fp-two', '{"n": 1}')), 'claimed', 'a run with two effects');
SELECT is((SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('fp-two', pg_temp.owner_of('fp-two'), pg_temp.version_of('fp-two'),
             '[{"type": "fp_two_a", "target": "x", "payload": {}}, {"type": "fp_two_b", "target": "y", "payload": {}}]')),
          2, 'two effects enqueued');
SELECT is(pg_temp.deliver('fp_two_a', 'rejected'), 'failed', 'the first effect refused');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-two'), 'approved', 'the run waits for its other effect');
SELECT is(pg_temp.deliver('fp_two_b', NULL), 'completed', 'the other effect delivered');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-two'), 'failed_terminal',
          'with its last effect settled the run ended failed_terminal');
-- Reinjecting the effect's dead letter brings the run back; it completes.
SELECT is((SELECT idemgate.reinject(id, 'fp-operator') FROM idemgate.dead_letters WHERE idempotency_key = 'fp-refused'), true,
          'the effect dead letter reinjected');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-refused'), 'approved', 'its run is approved again');
SELECT is((SELECT details->>'from' || '→' || (details->>'to') FROM idemgate.events
            WHERE idempotency_key = 'fp-refused' AND kind = 'effect_reinjected'), 'failed_terminal→approved',
          'the reinjection event records the run''s change');
SELECT is(pg_temp.deliver('fp_refused', NULL), 'completed', 'delivered this time');
SELECT is((SELECT state || ' ' || (result->'effects'->0->>'state') FROM idemgate.runs WHERE idempotency_key = 'fp-refused'),
          'completed completed', 'the run completed, its result names the delivered effect');
SELECT is((SELECT count(*) FROM idemgate.alerts WHERE alert = 'terminal_failure' AND message LIKE '%fp-refused%'), 0::bigint,
          'terminal_failure no longer names it');
-- reinject with a corrected payload: the provider refused the effect, so
-- a new effect (new id, so a new Idempotency-Key) replaces it.
SELECT pg_temp.enqueue('fp-fix', 'fp_fix');
SELECT effect_id AS fix_old FROM idemgate.outbox WHERE idempotency_key = 'fp-fix' \gset
SELECT is(pg_temp.deliver('fp_fix', 'rejected'), 'failed', 'the provider refused the malformed payload');
SELECT id AS fix_dl FROM idemgate.dead_letters WHERE idempotency_key = 'fp-fix' \gset
SELECT throws_ok(format('SELECT idemgate.reinject(%s, %L, %L)', :fix_dl, 'fp-operator', '[1, 2]'), '22023',
                 'argument "payload" must be a JSON object', 'a payload that is not an object: 22023');
SELECT throws_ok(format('SELECT idemgate.reinject(%s, %L, %L)', :fix_dl, 'fp-operator', '"x"'), '22023',
                 'argument "payload" must be a JSON object', 'a scalar payload: 22023');
SELECT is(idemgate.reinject(:fix_dl, 'fp-operator', '{"to": "fixed"}'), true, 'reinjected with a corrected payload');
SELECT results_eq($$SELECT effect_id <> '$$ || :'fix_old' || $$'::uuid, replaces = '$$ || :'fix_old' || $$'::uuid, payload, state, attempts
                      FROM idemgate.outbox WHERE idempotency_key = 'fp-fix'$$,
                  $$VALUES (true, true, '{"to": "fixed"}'::jsonb, 'pending', 0)$$,
                  'a new effect id (a new Idempotency-Key) replaces the refused one, with the corrected payload');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-fix'), 'approved', 'its run is approved again');
SELECT results_eq($$SELECT actor, details->>'payload_hmac', details->>'replaces' FROM idemgate.events
                     WHERE idempotency_key = 'fp-fix' AND kind = 'effect_replaced'$$,
                  format($$VALUES ('fp-operator', idemgate.payload_hmac(idemgate.hash_payload('{"to": "fixed"}')), %L)$$, :'fix_old'),
                  'the event names the actor, the corrected payload (keyed hash: readers see events) and the replaced effect');
SELECT is((SELECT payload FROM idemgate.dead_letters WHERE id = :fix_dl), '{"to": "x"}'::jsonb,
          'the dead letter keeps the refused payload');
SELECT is(pg_temp.deliver('fp_fix', NULL), 'completed', 'the corrected effect is delivered');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-fix'), 'completed', 'and its run completes');
-- Only a rejected effect can take a payload: after a maybe-sent failure
-- the provider may have acted on the one it got.
SELECT pg_temp.enqueue('fp-maybe', 'fp_maybe');
SELECT is(pg_temp.deliver('fp_maybe', 'transport'), 'pending', 'a transport failure: pending');
UPDATE idemgate.outbox SET attempts = 3 WHERE idempotency_key = 'fp-maybe';
UPDATE idemgate.outbox SET next_attempt_at = now() WHERE idempotency_key = 'fp-maybe';
SELECT is(pg_temp.deliver('fp_maybe', 'transport'), 'failed', 'attempts exhausted: failed');
SELECT id AS maybe_dl FROM idemgate.dead_letters WHERE idempotency_key = 'fp-maybe' \gset
SELECT throws_ok(format('SELECT idemgate.reinject(%s, %L, %L)', :maybe_dl, 'fp-operator', '{"to": "y"}'), 'IG002',
                 format('dead letter %s cannot be reinjected with a payload: its effect failed as transport, not rejected', :maybe_dl),
                 'a payload on a letter whose class is not rejected: IG002 saying why');
SELECT is((SELECT reinjected_at IS NULL FROM idemgate.dead_letters WHERE id = :maybe_dl), true, 'the letter stays open');
SELECT is(idemgate.reinject(:maybe_dl, 'fp-operator'), true, 'without a payload it goes back as it was');

-- supersede accepts a run that failed for good, once.
SELECT pg_temp.enqueue('fp-orig', 'fp_orig');
SELECT is(pg_temp.deliver('fp_orig', 'rejected'), 'failed', 'refused');
SELECT is((SELECT outcome FROM idemgate.supersede('fp-orig', 'fp-orig-v2', '{"n": 2}', 'fp-operator', 'corrected input')),
          'claimed', 'a run that failed for good is superseded');
SELECT is((SELECT outcome FROM idemgate.supersede('fp-orig', 'fp-orig-v2', '{"n": 2}', 'fp-operator', 'corrected input')),
          'duplicate', 'the same supersede again: a duplicate');
SELECT throws_ok($$SELECT idemgate.supersede('fp-orig', 'fp-orig-v3', '{"n": 3}', 'fp-operator', 'again')$$, 'IG002',
                 'run "fp-orig" was already superseded by "fp-orig-v2"', 'a second successor: IG002 naming the first');

-- The safety net finds a run left approved with a failed effect.
SELECT pg_temp.enqueue('fp-net', 'fp_net');
SELECT is(pg_temp.deliver('fp_net', 'rejected'), 'failed', 'refused');
UPDATE idemgate.runs SET state = 'approved' WHERE idempotency_key = 'fp-net';
SELECT is(idemgate.complete_settled_runs(NULL), 1, 'complete_settled_runs ends it');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'fp-net'), 'failed_terminal', 'as failed_terminal');

-- Tombstones: a purged key is never claimed as new.
SELECT pg_temp.enqueue('fp-old', 'fp_old');
SELECT is(pg_temp.deliver('fp_old', NULL), 'completed', 'delivered');
UPDATE idemgate.runs SET updated_at = now() - interval '40 days', created_at = now() - interval '40 days'
 WHERE idempotency_key = 'fp-old';
SELECT is(idemgate.purge('30 days'), 1::bigint, 'purged');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'fp-old'), 0::bigint, 'the run is gone');
SELECT is((SELECT final_state::text || ' ' || (finished_at < now() - interval '39 days')::text FROM idemgate.tombstones),
          'c true', 'its tombstone: completed, finished 40 days ago');
SELECT is((SELECT key_digest FROM idemgate.tombstones),
          bit_in(('x' || encode(substr(sha256(convert_to('fp-old', 'UTF8')), 1, 8), 'hex'))::cstring, 0, 64)::bigint,
          'keyed by the digest of the key');
SELECT is((SELECT outcome || '/' || state FROM idemgate.claim('fp-old', '{"n": 1}')), 'duplicate/purged',
          'the webhook redelivered weeks later: duplicate, state purged');
SELECT is((SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'fp-old'), 0::bigint, 'nothing was inserted');
SELECT throws_ok($$SELECT idemgate.claim('fp-old', '{"n": 2}')$$, 'IG001', NULL, 'a changed payload: IG001');
SELECT is((SELECT outcome FROM idemgate.claim('{"key": "fp-old", "payload": {"n": 1}}'::jsonb)), 'duplicate',
          'the jsonb form too');
SELECT is((SELECT pg_column_size(t.*) FROM idemgate.tombstones t) <= 64, true, 'a tombstone row is small (57 bytes)');
SELECT throws_ok($$SELECT idemgate.purge_tombstones('-1 day')$$, '22023', NULL, 'a negative interval: 22023');
SELECT throws_ok($$SELECT idemgate.purge_tombstones(NULL)$$, '22004', NULL, 'NULL: 22004');
SELECT is(idemgate.purge_tombstones('1 day'), 0::bigint, 'tombstones younger than a day stay');
UPDATE idemgate.tombstones SET purged_at = now() - interval '2 days';
SELECT is(idemgate.purge_tombstones('1 day'), 1::bigint, 'older ones go');
SELECT is((SELECT outcome FROM idemgate.claim('fp-old', '{"n": 2}')), 'claimed', 'then the key is new again');

-- approvals_waiting: an approval nobody decided for longer than
-- idemgate.alert_approval_wait (4 hours) names its key and audience.
SELECT is((SELECT outcome FROM idemgate.claim('fp-wait', '{"n": 1}', workflow => 'fp-wf')), 'claimed', 'a run to approve');
SELECT is((SELECT count(*) FROM idemgate.request_approval('fp-wait', pg_temp.owner_of('fp-wait'), pg_temp.version_of('fp-wait'),
             '{"type": "fp_mail", "target": "x", "payload": {}}', '2 days', audience => '{mary}')), 1::bigint, 'approval requested');
SELECT is((SELECT count(*) FROM idemgate.alerts WHERE alert = 'approvals_waiting'), 0::bigint, 'a fresh approval: no alert');
UPDATE idemgate.approvals SET created_at = now() - interval '5 hours' WHERE idempotency_key = 'fp-wait';
SELECT is((SELECT message FROM idemgate.alerts WHERE alert = 'approvals_waiting'),
          'approval of run fp-wait of workflow fp-wf waiting for a decision since ' || to_char(now() - interval '5 hours', 'HH24:MI')
          || ' (audience: mary; decide with consume_approval or cancel_approval)',
          'after 5 hours: approvals_waiting names the key and the audience');
SELECT is((SELECT count(*) FROM idemgate.alert_instances WHERE alert = 'approvals_waiting' AND keys = '{fp-wait}'), 1::bigint,
          'its keys');
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second' WHERE idempotency_key = 'fp-wait';
SELECT is((SELECT count(*) FROM idemgate.alerts WHERE alert = 'approvals_waiting'), 0::bigint, 'an expired one is not waiting');

-- The distributed version of the unsettled-runs part of the alerts answers
-- on one node too (1.2 raised 42703: no bucket column there).
SELECT lives_ok($$SELECT count(*) FROM idemgate.distributed_alert_unsettled_runs()$$,
                'distributed_alert_unsettled_runs() on one node');

SELECT * FROM finish();
ROLLBACK;
