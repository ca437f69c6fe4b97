-- Operating effects per type (SPEC §14): the effect_types view,
-- pause_effect_type / resume_effect_type (audited; a paused type is held by
-- claim_effects and by the dispatcher), unregister_endpoint (audited), and
-- not_before (delayed effects). Pull-API types have no endpoint; the one
-- dispatcher type posts to a closed local port, so every attempt the
-- dispatcher makes shows as attempts > 0.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- mk claims key k and enqueues n effects of type t automatically.
CREATE FUNCTION pg_temp.mk(k text, t text, n int, extra jsonb DEFAULT '{}') RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', '{}') || extra)
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;

-- The contract's columns.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'idemgate.effect_types'::regclass AND attnum > 0 ORDER BY attnum;

SELECT count(*) FROM pg_temp.mk('et-1', 'et_mail', 3);
SELECT count(*) FROM pg_temp.mk('et-2', 'et_sms', 2);

-- Bad arguments: 22004 / 22023 naming the argument, IG003 for a type with
-- no effect, endpoint or pause (a misspelling would otherwise pass).
SELECT pg_temp.sqlstate_of($$SELECT idemgate.pause_effect_type(NULL, 'ops', 'why')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.pause_effect_type('et_mail', NULL, 'why')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.pause_effect_type('et_mail', 'ops', '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.pause_effect_type('et_mial', 'ops', 'typo')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resume_effect_type('et_mial', 'ops')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resume_effect_type('et_mail', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.unregister_endpoint(NULL, 'ops')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.unregister_endpoint('et_mail', '')$$);
SELECT count(*) AS nothing_written FROM idemgate.paused_effect_types;

-- Pause: audited, claim_effects hands out nothing of that type, other
-- types are not held.
SELECT idemgate.pause_effect_type('et_mail', 'ana', 'provider incident 7');
SELECT effect_type, paused_by, reason FROM idemgate.paused_effect_types;
SELECT kind, actor, details - 'role' AS details FROM idemgate.events
 WHERE kind LIKE 'effect_type_%' ORDER BY id;
SELECT count(*) AS claimed_while_paused FROM idemgate.claim_effects('et_mail', 10);
SELECT count(*) AS other_type_claimed FROM idemgate.claim_effects('et_sms', 10);
SELECT effect_type, has_endpoint, paused, pending, due, sending, unknown, failed_24h, completed_24h,
       oldest_pending_age IS NOT NULL AS has_age
  FROM idemgate.effect_types WHERE effect_type LIKE 'et\_%' ORDER BY 1;
-- The 24-hour figures: one et_sms effect completed, one failed (rejected).
SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM idemgate.outbox
 WHERE effect_type = 'et_sms' AND target = 'target-1';
SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', 'HTTP 400') FROM idemgate.outbox
 WHERE effect_type = 'et_sms' AND target = 'target-2';
SELECT effect_type, pending, sending, failed_24h, completed_24h FROM idemgate.effect_types WHERE effect_type = 'et_sms';
-- Pausing again updates who and why (still one row, audited again).
SELECT idemgate.pause_effect_type('et_mail', 'bob', 'still broken');
SELECT effect_type, paused_by, reason FROM idemgate.paused_effect_types;
-- Resume: the held effects go out.
SELECT idemgate.resume_effect_type('et_mail', 'bob');
SELECT count(*) AS claimed_after_resume FROM idemgate.claim_effects('et_mail', 10);
SELECT kind, actor, details - 'role' AS details FROM idemgate.events
 WHERE kind LIKE 'effect_type_%' ORDER BY id;
-- Resuming a type that is not paused changes nothing (recorded, previous false).
SELECT idemgate.resume_effect_type('et_mail', 'bob');
SELECT count(*) FROM idemgate.paused_effect_types;

-- A paused type is held by the dispatcher too: an endpoint on a closed
-- port, paused before its effects are enqueued. Nothing is attempted in
-- 2 seconds (the dispatcher polls every 200 ms); after resume the
-- dispatcher tries (attempts > 0).
SELECT idemgate.register_endpoint('et_hook', 'http://127.0.0.1:9/hook', max_attempts => 100);
SELECT idemgate.pause_effect_type('et_hook', 'ana', 'hold');
SELECT count(*) FROM pg_temp.mk('et-3', 'et_hook', 2);
SELECT pg_sleep(2);
SELECT state, attempts FROM idemgate.outbox WHERE effect_type = 'et_hook' ORDER BY target;
SELECT idemgate.resume_effect_type('et_hook', 'ana');
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXIT WHEN (SELECT bool_and(attempts > 0) FROM idemgate.outbox WHERE effect_type = 'et_hook');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT bool_and(attempts > 0) AS dispatcher_tried FROM idemgate.outbox WHERE effect_type = 'et_hook';
SELECT effect_type, has_endpoint, paused FROM idemgate.effect_types WHERE effect_type = 'et_hook';

-- unregister_endpoint: audited, true once, false afterwards; the type stays
-- in effect_types (it still has effects), without an endpoint.
SELECT idemgate.unregister_endpoint('et_hook', 'ana');
SELECT idemgate.unregister_endpoint('et_hook', 'ana');
SELECT count(*) AS endpoints_left FROM idemgate.endpoints WHERE effect_type = 'et_hook';
SELECT kind, actor, details - 'role' AS details FROM idemgate.events
 WHERE kind = 'endpoint_unregistered' ORDER BY id;
SELECT effect_type, has_endpoint FROM idemgate.effect_types WHERE effect_type = 'et_hook';
-- An endpoint alone (no effects) is listed; so is a pause alone.
SELECT idemgate.register_endpoint('et_only_endpoint', 'http://127.0.0.1:9/x');
SELECT effect_type, has_endpoint, paused, pending FROM idemgate.effect_types
 WHERE effect_type = 'et_only_endpoint';
SELECT idemgate.pause_effect_type('et_only_endpoint', 'ana', 'not yet');
SELECT idemgate.unregister_endpoint('et_only_endpoint', 'ana');
SELECT effect_type, has_endpoint, paused, pending FROM idemgate.effect_types
 WHERE effect_type = 'et_only_endpoint';
SELECT idemgate.resume_effect_type('et_only_endpoint', 'ana');
SELECT count(*) FROM idemgate.effect_types WHERE effect_type = 'et_only_endpoint';

-- not_before: a delayed effect is pending but not due until then.
SELECT count(*) FROM pg_temp.mk('et-4', 'et_later', 1, jsonb_build_object('not_before', now() + interval '1 hour'));
SELECT count(*) FROM pg_temp.mk('et-5', 'et_later', 1, jsonb_build_object('target', 'past', 'not_before', now() - interval '1 hour'));
SELECT target, state, next_attempt_at > now() + interval '59 minutes' AS delayed,
       next_attempt_at <= now() AS due_now
  FROM idemgate.outbox WHERE effect_type = 'et_later' ORDER BY target;
SELECT pending, due FROM idemgate.effect_types WHERE effect_type = 'et_later';
SELECT target FROM idemgate.claim_effects('et_later', 10);
-- Bad not_before: 22023 naming the field, nothing written.
SELECT pg_temp.sqlstate_of($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": "tomorrow-ish"}')$$);
SELECT pg_temp.sqlstate_of($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": 12}')$$);
SELECT pg_temp.sqlstate_of($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": "infinity"}')$$);
SELECT count(*) AS nothing_written FROM idemgate.runs WHERE idempotency_key = 'et-6';

-- Privileges: a reader sees effect_types but cannot pause or unregister.
CREATE ROLE et_reader;
SELECT idemgate.grant_role('et_reader', 'reader');
SET ROLE et_reader;
SELECT count(*) > 0 AS reader_sees FROM idemgate.effect_types;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.pause_effect_type('et_mail', 'x', 'y')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.unregister_endpoint('et_mail', 'x')$$);
RESET ROLE;
SELECT idemgate.revoke_role('et_reader', 'reader');
DROP ROLE et_reader;
