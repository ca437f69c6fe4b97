-- Dead letters and reinjection: reinject, reinject_all, resolve_effect.
-- Effects are enqueued with claim + enqueue_effect; effect types have no
-- endpoint, so a running dispatcher never sends them. pgTAP.
\i test/sql/include/pgtap.psql
SELECT now() AS t0 \gset

CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', jsonb_build_object('n', g, 'to', k)))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;

-- fail_all(type, class): claims every due effect of the type and fails it.
CREATE FUNCTION pg_temp.fail_all(t text, cls text) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT idemgate.fail_effect(effect_id, lease_owner, cls, cls || ' error')
  FROM idemgate.claim_effects(t, 100);
$$;
SELECT * FROM no_plan();

-- Bad input.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.reinject(NULL, 'op')$$, '22004', 'argument "id" must not be NULL'),
  ($$SELECT idemgate.reinject(1, NULL)$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.reinject(1, '')$$, '22023', 'argument "actor" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.reinject(-42, 'op')$$, 'IG003', 'dead letter -42 does not exist'),
  ($$SELECT idemgate.reinject_all(NULL)$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.reinject_all('op', '')$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.resolve_effect(NULL, true, 'op')$$, '22004', 'argument "effect_id" must not be NULL'),
  ($$SELECT idemgate.resolve_effect(gen_random_uuid(), NULL, 'op')$$, '22004', 'argument "delivered" must not be NULL'),
  ($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, NULL)$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'op', '')$$, '22023',
   'argument "provider_id" must be between 1 and 1000 bytes long, not 0'),
  ($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'op', NULL, '')$$, '22023',
   'argument "note" must be between 1 and 2000 bytes long, not 0'),
  ($$SELECT idemgate.resolve_effect('00000000-0000-4000-8000-00000000dead', true, 'op')$$, 'IG003',
   'effect 00000000-0000-4000-8000-00000000dead does not exist')
) AS t(q, code, m);

-- An effect exhausts its retries → dead letter → reinject: pending again,
-- attempts reset, due now, same effect_id (so the provider sees the same
-- Idempotency-Key); its run stays approved. A second reinject is false.
SELECT is((SELECT count(*) FROM pg_temp.mk('deadletters-e1', 'deadletters_e1', 2)), 2::bigint, 'two effects');
SELECT results_eq($$SELECT * FROM pg_temp.fail_all('deadletters_e1', 'rejected')$$, $$VALUES ('failed'), ('failed')$$,
                  'rejected: both failed');
SELECT id AS dl1 FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-e1' AND target = 'target-1' \gset
SELECT id AS dl2 FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-e1' AND target = 'target-2' \gset
CREATE TEMP TABLE e1 AS SELECT effect_id, target FROM idemgate.outbox WHERE idempotency_key = 'deadletters-e1';
SELECT results_eq($$SELECT kind, effect_type, target, payload, error_class, error, attempts FROM idemgate.dead_letters
                     WHERE idempotency_key = 'deadletters-e1' ORDER BY target$$,
                  $$VALUES ('effect', 'deadletters_e1', 'target-1', '{"n": 1, "to": "deadletters-e1"}'::jsonb, 'rejected', 'rejected error', 1),
                           ('effect', 'deadletters_e1', 'target-2', '{"n": 2, "to": "deadletters-e1"}'::jsonb, 'rejected', 'rejected error', 1)$$,
                  'two effect dead letters with type, target, payload and error');
BEGIN;
SELECT is(idemgate.reinject(:dl1, 'alice'), true, 'first reinject: true');
SELECT results_eq($$SELECT o.state, o.attempts, o.next_attempt_at = now(), o.lease_owner IS NULL, o.effect_id = e1.effect_id
                      FROM idemgate.outbox o JOIN e1 USING (target)
                     WHERE o.idempotency_key = 'deadletters-e1' AND target = 'target-1'$$,
                  $$VALUES ('pending', 0, true, true, true)$$, 'pending again, attempts 0, due now, unowned, same effect id');
SELECT results_eq(format('SELECT reinjected_at = now(), reinjected_by FROM idemgate.dead_letters WHERE id = %s', :dl1),
                  $$VALUES (true, 'alice')$$, 'the letter records who and when');
COMMIT;
SELECT is(idemgate.reinject(:dl1, 'bob'), false, 'second reinject: false');
SELECT is((SELECT reinjected_by FROM idemgate.dead_letters WHERE id = :dl1), 'alice', 'still reinjected by alice');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-e1'), 'approved', 'the run stays approved');
-- the reinjected effect is claimed again with attempt 1 and the same id
SELECT results_eq($$SELECT c.effect_id = e1.effect_id, c.attempt, c.target
                      FROM idemgate.claim_effects('deadletters_e1') c JOIN e1 USING (target)$$,
                  $$VALUES (true, 1, 'target-1')$$, 'claimed again: attempt 1, same id');
SELECT results_eq($$SELECT kind, actor, details ? 'dead_letter_id' FROM idemgate.events
                     WHERE idempotency_key = 'deadletters-e1' AND kind = 'effect_reinjected'$$,
                  $$VALUES ('effect_reinjected', 'alice', true)$$, 'the reinjection is audited');

-- A dead letter whose effect's run is no longer approved cannot go back:
-- the effect could never be sent. IG002; the letter stays open.
SELECT is((SELECT idemgate.fail(idempotency_key, lease_owner, version, 'aborted', 'operator gave up', false)
             FROM idemgate.runs WHERE idempotency_key = 'deadletters-e1'), 'failed_terminal', 'the run fails for good');
SELECT throws_ok(format('SELECT idemgate.reinject(%s, %L)', :dl2, 'alice'), 'IG002',
                 format('dead letter %s cannot be reinjected: the effect''s run is failed_terminal, not approved, so it could never be sent', :dl2),
                 'reinject with the run failed_terminal: IG002');
SELECT is((SELECT reinjected_at IS NULL FROM idemgate.dead_letters WHERE id = :dl2), true, 'the letter stays open');

-- A run dead letter (terminal failure) → reinject → failed_retryable with
-- its failure count reset, so the next delivery of the event recovers it.
SELECT is((SELECT outcome FROM idemgate.claim('deadletters-r1', '{"invoice": 7}', '1 minute', 'dl-flow',
                                              '00000000-0000-0000-0000-0000000000d1')), 'claimed', 'deadletters-r1 claimed');
SELECT is(idemgate.fail('deadletters-r1', '00000000-0000-0000-0000-0000000000d1', 0, 'bad_input', 'malformed', false),
          'failed_terminal', 'fails terminally');
SELECT id AS dlr FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-r1' \gset
SELECT results_eq(format('SELECT kind, effect_id, payload, error_class, error, attempts FROM idemgate.dead_letters WHERE id = %s', :dlr),
                  $$VALUES ('run', NULL::uuid, '{"invoice": 7}'::jsonb, 'bad_input', 'malformed', 1)$$, 'a run dead letter');
SELECT is(idemgate.reinject(:dlr, 'carol'), true, 'the run letter is reinjected');
SELECT results_eq($$SELECT state, failures FROM idemgate.runs WHERE idempotency_key = 'deadletters-r1'$$,
                  $$VALUES ('failed_retryable', 0)$$, 'the run is failed_retryable, failures reset');
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim('deadletters-r1', '{"invoice": 7}')$$,
                  $$VALUES ('recovered', 'processing')$$, 'the next delivery recovers it');
SELECT is(idemgate.reinject(:dlr, 'carol'), false, 'a second reinject: false');
SELECT results_eq($$SELECT kind, actor, details ? 'dead_letter_id', details->>'from', details->>'to'
                      FROM idemgate.events WHERE idempotency_key = 'deadletters-r1' AND kind IN ('state_changed', 'run_reinjected')
                     ORDER BY id$$,
                  $$VALUES ('state_changed', NULL::text, false, 'processing', 'failed_terminal'),
                           ('run_reinjected', 'carol', true, 'failed_terminal', 'failed_retryable')$$,
                  'audited: the failure, the reinjection');

-- reinject_all: only open letters; effect_type narrows to effect letters of
-- that type; since narrows by dead_at. Letters whose object cannot go back
-- are skipped and stay open (the second deadletters-e1 letter, whose run is
-- failed_terminal).
SELECT is((SELECT count(*) FROM pg_temp.mk('deadletters-a', 'deadletters_a', 3)), 3::bigint, 'three effects of type a');
SELECT is((SELECT count(*) FROM pg_temp.mk('deadletters-b', 'deadletters_b', 1)), 1::bigint, 'one effect of type b');
SELECT is((SELECT count(*) FROM pg_temp.fail_all('deadletters_a', 'rejected')), 3::bigint, 'type a dead-lettered');
SELECT is((SELECT count(*) FROM pg_temp.fail_all('deadletters_b', 'rejected')), 1::bigint, 'type b dead-lettered');
SELECT is((SELECT outcome FROM idemgate.claim('deadletters-r2', '{"invoice": 8}', '1 minute', NULL,
                                              '00000000-0000-0000-0000-0000000000d2')), 'claimed', 'deadletters-r2 claimed');
SELECT is(idemgate.fail('deadletters-r2', '00000000-0000-0000-0000-0000000000d2', 0, 'bad_input', NULL, false),
          'failed_terminal', 'and fails terminally');
SELECT is(idemgate.reinject_all('dave', 'deadletters_a', :'t0'), 3, 'reinject_all of type a: 3');
SELECT is(idemgate.reinject_all('dave', 'deadletters_a', :'t0'), 0, 'again: 0');
SELECT is(idemgate.reinject_all('dave', NULL, now() + interval '1 hour'), 0, 'none that recent: 0');
SELECT is(idemgate.reinject_all('dave', NULL, :'t0'), 3, 'the rest: 3');
SELECT results_eq(format($$SELECT idempotency_key, kind, reinjected_by FROM idemgate.dead_letters
                            WHERE dead_at >= %L ORDER BY idempotency_key, target$$, :'t0'),
                  $$VALUES ('deadletters-a', 'effect', 'dave'), ('deadletters-a', 'effect', 'dave'), ('deadletters-a', 'effect', 'dave'),
                           ('deadletters-b', 'effect', 'dave'), ('deadletters-e1', 'effect', 'alice'),
                           ('deadletters-e1', 'effect', NULL), ('deadletters-e1', 'run', 'dave'),
                           ('deadletters-r1', 'run', 'carol'), ('deadletters-r2', 'run', 'dave')$$,
                  'every letter since t0: who reinjected it; the blocked one stays open');
SELECT results_eq($$SELECT idempotency_key, state, attempts, count(*) FROM idemgate.outbox
                     WHERE idempotency_key IN ('deadletters-a', 'deadletters-b') GROUP BY 1, 2, 3 ORDER BY 1$$,
                  $$VALUES ('deadletters-a', 'pending', 0, 3::bigint), ('deadletters-b', 'pending', 0, 1::bigint)$$,
                  'their effects are pending again');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-r2'), 'failed_retryable', 'the run is retryable again');

-- resolve_effect: only for unknown effects. Delivered → completed (the run
-- completes with its last effect); not delivered → pending, due now, attempts reset.
SELECT is((SELECT count(*) FROM pg_temp.mk('deadletters-u', 'deadletters_u', 2)), 2::bigint, 'two effects of type u');
SELECT results_eq($$SELECT * FROM pg_temp.fail_all('deadletters_u', 'timeout_after_send')$$, $$VALUES ('unknown'), ('unknown')$$,
                  'timeout after send: unknown');
CREATE TEMP TABLE u AS SELECT effect_id, target FROM idemgate.outbox WHERE idempotency_key = 'deadletters-u';
SELECT is((SELECT idemgate.resolve_effect(effect_id, false, 'erin', NULL, 'provider has no record') FROM u WHERE target = 'target-2'),
          'pending', 'not delivered: pending');
SELECT results_eq($$SELECT target, state, attempts, next_attempt_at <= now() FROM idemgate.outbox
                     WHERE idempotency_key = 'deadletters-u' ORDER BY target$$,
                  $$VALUES ('target-1', 'unknown', 1, true), ('target-2', 'pending', 0, true)$$, 'attempts reset, due now');
SELECT throws_ok(format('SELECT idemgate.resolve_effect(%L, true, %L)', effect_id, 'erin'), 'IG002',
                 format('effect %s is pending; only unknown effects can be resolved', effect_id), 'resolving a pending effect: IG002')
  FROM u WHERE target = 'target-2';
SELECT is((SELECT idemgate.resolve_effect(effect_id, true, 'erin', 'prov-77', 'found in provider dashboard') FROM u WHERE target = 'target-1'),
          'completed', 'delivered: completed');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-u'), 'approved', 'the run waits for its other effect');
-- the resent one completes through the normal path and completes the run
SELECT results_eq($$SELECT idemgate.complete_effect(effect_id, lease_owner, 'prov-78') FROM idemgate.claim_effects('deadletters_u')$$,
                  $$VALUES (true)$$, 'the resent effect completes');
SELECT results_eq($$SELECT target, state, provider_id FROM idemgate.outbox WHERE idempotency_key = 'deadletters-u' ORDER BY target$$,
                  $$VALUES ('target-1', 'completed', 'prov-77'), ('target-2', 'completed', 'prov-78')$$, 'both completed');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-u'), 'completed', 'and the run completes');
SELECT bag_eq($$SELECT kind, actor, details FROM idemgate.key_history
                     WHERE idempotency_key = 'deadletters-u' AND kind IN ('effect_resolved', 'state_changed')$$,
                  $$VALUES ('effect_resolved', 'erin'::text, '{"note": "provider has no record", "delivered": false, "new_state": "pending"}'::jsonb),
                           ('effect_resolved', 'erin', '{"note": "found in provider dashboard", "delivered": true, "new_state": "completed", "provider_id": "prov-77"}'),
                           ('state_changed', NULL, '{"to": "completed", "from": "approved", "version": 2}')$$,
                  'the resolutions are audited');
-- a failed effect is not resolved but reinjected (IG002 with a hint)
SELECT is((SELECT count(*) FROM pg_temp.mk('deadletters-f', 'deadletters_f', 1)), 1::bigint, 'one effect of type f');
SELECT results_eq($$SELECT * FROM pg_temp.fail_all('deadletters_f', 'rejected')$$, $$VALUES ('failed')$$, 'rejected: failed');
SELECT throws_ok(format('SELECT idemgate.resolve_effect(%L, false, %L)', effect_id, 'erin'), 'IG002',
                 format('effect %s is failed; only unknown effects can be resolved', effect_id), 'resolving a failed effect: IG002')
  FROM idemgate.outbox WHERE idempotency_key = 'deadletters-f';

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;

-- Clean up this file's rows (other files share the database).
DELETE FROM idemgate.dead_letters WHERE idempotency_key LIKE 'deadletters-%';
DELETE FROM idemgate.outbox WHERE idempotency_key LIKE 'deadletters-%';
DELETE FROM idemgate.approvals WHERE idempotency_key LIKE 'deadletters-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'deadletters-%';
