-- Dead letters and reinjection: reinject, reinject_all, resolve_effect.
-- Effects are enqueued with claim + enqueue_effect; effect types have no
-- endpoint, so a running dispatcher never sends them.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse
SELECT now() AS t0 \gset

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', jsonb_build_object('n', g, 'to', k)))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;

-- fail_once(key, class): claims every due effect of the key's type and fails it.
CREATE FUNCTION pg_temp.fail_all(t text, cls text) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT idemgate.fail_effect(effect_id, lease_owner, cls, cls || ' error')
  FROM idemgate.claim_effects(t, 100);
$$;

-- Bad input.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject(NULL, 'op')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject(1, NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject(1, '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject(-42, 'op')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject_all(NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject_all('op', '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(NULL, true, 'op')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), NULL, 'op')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'op', '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'op', NULL, '')$$);
SELECT regexp_replace(pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'op')$$),
                      '[0-9a-f-]{36}', '<uuid>');

-- An effect exhausts its retries → dead letter → reinject: pending again,
-- attempts reset, due now, same effect_id (so the provider sees the same
-- Idempotency-Key); its run stays approved. A second reinject is false.
SELECT count(*) FROM pg_temp.mk('deadletters-e1', 'deadletters_e1', 2);
SELECT pg_temp.fail_all('deadletters_e1', 'rejected');
SELECT id AS dl1 FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-e1' AND target = 'target-1' \gset
SELECT id AS dl2 FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-e1' AND target = 'target-2' \gset
CREATE TEMP TABLE e1 AS SELECT effect_id, target FROM idemgate.outbox WHERE idempotency_key = 'deadletters-e1';
SELECT kind, effect_type, target, payload, error_class, error, attempts FROM idemgate.dead_letters
WHERE idempotency_key = 'deadletters-e1' ORDER BY target;
BEGIN;
SELECT idemgate.reinject(:dl1, 'alice') AS first;
SELECT o.state, o.attempts, o.next_attempt_at = now() AS due_now, o.lease_owner IS NULL AS no_owner,
       o.effect_id = e1.effect_id AS same_effect
FROM idemgate.outbox o JOIN e1 USING (target) WHERE o.idempotency_key = 'deadletters-e1' AND target = 'target-1';
SELECT reinjected_at = now() AS at_ok, reinjected_by FROM idemgate.dead_letters WHERE id = :dl1;
COMMIT;
SELECT idemgate.reinject(:dl1, 'bob') AS second;
SELECT reinjected_by FROM idemgate.dead_letters WHERE id = :dl1;
SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-e1';
-- the reinjected effect is claimed again with attempt 1 and the same id
SELECT c.effect_id = e1.effect_id AS same_effect, c.attempt, c.target
FROM idemgate.claim_effects('deadletters_e1') c JOIN e1 USING (target);
SELECT kind, actor, details ? 'dead_letter_id' AS has_id FROM idemgate.events
WHERE idempotency_key = 'deadletters-e1' AND kind = 'effect_reinjected';

-- A dead letter whose effect's run is no longer approved cannot go back:
-- the effect could never be sent. IG002; the letter stays open.
SELECT idemgate.fail(idempotency_key, lease_owner, version, 'aborted', 'operator gave up', false)
FROM idemgate.runs WHERE idempotency_key = 'deadletters-e1';
SELECT regexp_replace(pg_temp.sqlstate_of(format('SELECT idemgate.reinject(%s, %L)', :dl2, 'alice')),
                      'letter [0-9]+', 'letter <id>');
SELECT reinjected_at IS NULL AS still_open FROM idemgate.dead_letters WHERE id = :dl2;

-- A run dead letter (terminal failure) → reinject → failed_retryable with
-- its failure count reset, so the next delivery of the event recovers it.
SELECT outcome FROM idemgate.claim('deadletters-r1', '{"invoice": 7}', '1 minute', 'dl-flow',
                                   '00000000-0000-0000-0000-0000000000d1');
SELECT idemgate.fail('deadletters-r1', '00000000-0000-0000-0000-0000000000d1', 0, 'bad_input', 'malformed', false);
SELECT id AS dlr FROM idemgate.dead_letters WHERE idempotency_key = 'deadletters-r1' \gset
SELECT kind, effect_id, payload, error_class, error, attempts FROM idemgate.dead_letters WHERE id = :dlr;
SELECT idemgate.reinject(:dlr, 'carol') AS run_reinjected;
SELECT state, failures FROM idemgate.runs WHERE idempotency_key = 'deadletters-r1';
SELECT outcome, state FROM idemgate.claim('deadletters-r1', '{"invoice": 7}');
SELECT idemgate.reinject(:dlr, 'carol') AS again;
SELECT kind, actor, details->'info' ? 'dead_letter_id' AS has_id, details->>'from' AS "from", details->>'to' AS "to"
FROM idemgate.events WHERE idempotency_key = 'deadletters-r1' AND kind IN ('state_changed', 'run_reinjected')
ORDER BY id;

-- reinject_all: only open letters; effect_type narrows to effect letters of
-- that type; since narrows by dead_at. Letters whose object cannot go back
-- are skipped and stay open (the second deadletters-e1 letter, whose run is
-- failed_terminal).
SELECT count(*) FROM pg_temp.mk('deadletters-a', 'deadletters_a', 3);
SELECT count(*) FROM pg_temp.mk('deadletters-b', 'deadletters_b', 1);
SELECT count(*) FROM pg_temp.fail_all('deadletters_a', 'rejected');
SELECT count(*) FROM pg_temp.fail_all('deadletters_b', 'rejected');
SELECT outcome FROM idemgate.claim('deadletters-r2', '{"invoice": 8}', '1 minute', NULL,
                                   '00000000-0000-0000-0000-0000000000d2');
SELECT idemgate.fail('deadletters-r2', '00000000-0000-0000-0000-0000000000d2', 0, 'bad_input', NULL, false);
SELECT idemgate.reinject_all('dave', 'deadletters_a', :'t0') AS type_a;
SELECT idemgate.reinject_all('dave', 'deadletters_a', :'t0') AS type_a_again;
SELECT idemgate.reinject_all('dave', NULL, now() + interval '1 hour') AS none_that_recent;
SELECT idemgate.reinject_all('dave', NULL, :'t0') AS the_rest;
SELECT idempotency_key, kind, reinjected_by FROM idemgate.dead_letters
WHERE dead_at >= :'t0' ORDER BY idempotency_key, target;
SELECT idempotency_key, state, attempts, count(*) FROM idemgate.outbox
WHERE idempotency_key IN ('deadletters-a', 'deadletters-b') GROUP BY 1, 2, 3 ORDER BY 1;
SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-r2';

-- resolve_effect: only for unknown effects. Delivered → completed (the run
-- completes with its last effect); not delivered → pending, due now, attempts reset.
SELECT count(*) FROM pg_temp.mk('deadletters-u', 'deadletters_u', 2);
SELECT pg_temp.fail_all('deadletters_u', 'timeout_after_send');
CREATE TEMP TABLE u AS SELECT effect_id, target FROM idemgate.outbox WHERE idempotency_key = 'deadletters-u';
SELECT idemgate.resolve_effect(effect_id, false, 'erin', NULL, 'provider has no record') FROM u WHERE target = 'target-2';
SELECT target, state, attempts, next_attempt_at <= now() AS due FROM idemgate.outbox
WHERE idempotency_key = 'deadletters-u' ORDER BY target;
SELECT regexp_replace(pg_temp.sqlstate_of(format('SELECT idemgate.resolve_effect(%L, true, %L)', effect_id, 'erin')),
                      '[0-9a-f-]{36}', '<uuid>') FROM u WHERE target = 'target-2';
SELECT idemgate.resolve_effect(effect_id, true, 'erin', 'prov-77', 'found in provider dashboard') FROM u WHERE target = 'target-1';
SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-u';
-- the resent one completes through the normal path and completes the run
SELECT idemgate.complete_effect(effect_id, lease_owner, 'prov-78') FROM idemgate.claim_effects('deadletters_u');
SELECT target, state, provider_id FROM idemgate.outbox WHERE idempotency_key = 'deadletters-u' ORDER BY target;
SELECT state FROM idemgate.runs WHERE idempotency_key = 'deadletters-u';
SELECT kind, actor, details FROM idemgate.events
WHERE idempotency_key = 'deadletters-u' AND kind IN ('effect_resolved', 'state_changed') ORDER BY id;
-- a failed effect is not resolved but reinjected (IG002 with a hint)
SELECT count(*) FROM pg_temp.mk('deadletters-f', 'deadletters_f', 1);
SELECT pg_temp.fail_all('deadletters_f', 'rejected');
SELECT regexp_replace(pg_temp.sqlstate_of(format('SELECT idemgate.resolve_effect(%L, false, %L)', effect_id, 'erin')),
                      '[0-9a-f-]{36}', '<uuid>') FROM idemgate.outbox WHERE idempotency_key = 'deadletters-f';

-- Clean up this file's rows (other files share the database).
DELETE FROM idemgate.dead_letters WHERE idempotency_key LIKE 'deadletters-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'deadletters-%';
