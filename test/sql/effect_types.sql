-- Operating effects per type (docs/operations.md): the effect_types view,
-- pause_effect_type / resume_effect_type (audited; a paused type is held by
-- claim_effects and by the dispatcher), unregister_endpoint (audited), and
-- not_before (delayed effects). Pull-API types have no endpoint; the one
-- dispatcher type posts to a closed local port, so every attempt the
-- dispatcher makes shows as attempts > 0. pgTAP.
\i test/sql/include/pgtap.psql
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
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- The contract's columns.
SELECT results_eq($$SELECT attname::text COLLATE "default", format_type(atttypid, atttypmod) FROM pg_attribute
                     WHERE attrelid = 'idemgate.effect_types'::regclass AND attnum > 0 ORDER BY attnum$$,
                  $$VALUES ('effect_type', 'text'), ('has_endpoint', 'boolean'), ('paused', 'boolean'), ('pending', 'bigint'),
                           ('due', 'bigint'), ('sending', 'bigint'), ('unknown', 'bigint'), ('failed_24h', 'bigint'),
                           ('completed_24h', 'bigint'), ('oldest_pending_age', 'interval')$$,
                  'effect_types: the contract''s columns');

SELECT is((SELECT count(*) FROM pg_temp.mk('et-1', 'et_mail', 3)), 3::bigint, 'three et_mail effects');
SELECT is((SELECT count(*) FROM pg_temp.mk('et-2', 'et_sms', 2)), 2::bigint, 'two et_sms effects');

-- Bad arguments: 22004 / 22023 naming the argument, IG003 for a type with
-- no effect, endpoint or pause (a misspelling would otherwise pass).
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.pause_effect_type(NULL, 'ops', 'why')$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.pause_effect_type('et_mail', NULL, 'why')$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.pause_effect_type('et_mail', 'ops', '')$$, '22023', 'argument "reason" must be between 1 and 2000 bytes long, not 0'),
  ($$SELECT idemgate.pause_effect_type('et_mial', 'ops', 'typo')$$, 'IG003', 'effect type "et_mial" is unknown'),
  ($$SELECT idemgate.resume_effect_type('et_mial', 'ops')$$, 'IG003', 'effect type "et_mial" is unknown'),
  ($$SELECT idemgate.resume_effect_type('et_mail', NULL)$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.unregister_endpoint(NULL, 'ops')$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.unregister_endpoint('et_mail', '')$$, '22023', 'argument "actor" must be between 1 and 200 bytes long, not 0')
) AS t(q, code, m);
SELECT is_empty('SELECT * FROM idemgate.paused_effect_types', 'nothing written');

-- Pause: audited, claim_effects hands out nothing of that type, other
-- types are not held.
SELECT idemgate.pause_effect_type('et_mail', 'ana', 'provider incident 7') \g /dev/null
SELECT results_eq($$SELECT effect_type, paused_by, reason FROM idemgate.paused_effect_types$$,
                  $$VALUES ('et_mail', 'ana', 'provider incident 7')$$, 'et_mail paused by ana');
SELECT results_eq($$SELECT kind, actor, details - 'role' FROM idemgate.events WHERE kind LIKE 'effect_type_%' ORDER BY id$$,
                  $$VALUES ('effect_type_paused', 'ana', '{"reason": "provider incident 7", "effect_type": "et_mail", "previous_paused": false}'::jsonb)$$,
                  'the pause is audited');
SELECT is_empty($$SELECT * FROM idemgate.claim_effects('et_mail', 10)$$, 'nothing of a paused type is claimed');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('et_sms', 10)), 2::bigint, 'another type is not held');
SELECT results_eq($$SELECT effect_type, has_endpoint, paused, pending, due, sending, unknown, failed_24h, completed_24h,
                           oldest_pending_age IS NOT NULL
                      FROM idemgate.effect_types WHERE effect_type LIKE 'et\_%' ORDER BY 1$$,
                  $$VALUES ('et_mail', false, true, 3::bigint, 3::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, true),
                           ('et_sms', false, false, 0, 0, 2, 0, 0, 0, false)$$,
                  'effect_types: et_mail paused with three due, et_sms sending');
-- The 24-hour figures: one et_sms effect completed, one failed (rejected).
SELECT is((SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM idemgate.outbox
            WHERE effect_type = 'et_sms' AND target = 'target-1'), true, 'one et_sms effect completed');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', 'HTTP 400') FROM idemgate.outbox
            WHERE effect_type = 'et_sms' AND target = 'target-2'), 'failed', 'one et_sms effect failed');
SELECT results_eq($$SELECT effect_type, pending, sending, failed_24h, completed_24h FROM idemgate.effect_types WHERE effect_type = 'et_sms'$$,
                  $$VALUES ('et_sms', 0::bigint, 0::bigint, 1::bigint, 1::bigint)$$, 'the 24-hour figures');
-- Pausing again updates who and why (still one row, audited again).
SELECT idemgate.pause_effect_type('et_mail', 'bob', 'still broken') \g /dev/null
SELECT results_eq($$SELECT effect_type, paused_by, reason FROM idemgate.paused_effect_types$$,
                  $$VALUES ('et_mail', 'bob', 'still broken')$$, 'pausing again updates who and why');
-- Resume: the held effects go out.
SELECT idemgate.resume_effect_type('et_mail', 'bob') \g /dev/null
SELECT is((SELECT count(*) FROM idemgate.claim_effects('et_mail', 10)), 3::bigint, 'after resume the held effects go out');
SELECT results_eq($$SELECT kind, actor, details - 'role' FROM idemgate.events WHERE kind LIKE 'effect_type_%' ORDER BY id$$,
                  $$VALUES ('effect_type_paused', 'ana', '{"reason": "provider incident 7", "effect_type": "et_mail", "previous_paused": false}'::jsonb),
                           ('effect_type_paused', 'bob', '{"reason": "still broken", "effect_type": "et_mail", "previous_paused": true}'::jsonb),
                           ('effect_type_resumed', 'bob', '{"effect_type": "et_mail", "previous_paused": true}'::jsonb)$$,
                  'pause, pause again and resume audited');
-- Resuming a type that is not paused changes nothing (recorded, previous false).
SELECT idemgate.resume_effect_type('et_mail', 'bob') \g /dev/null
SELECT is_empty('SELECT * FROM idemgate.paused_effect_types', 'resuming again changes nothing');

-- A paused type is held by the dispatcher too: an endpoint on a closed
-- port, paused before its effects are enqueued. Nothing is attempted in
-- 2 seconds (the dispatcher polls every 200 ms); after resume the
-- dispatcher tries (attempts > 0).
SELECT idemgate.register_endpoint('et_hook', 'http://127.0.0.1:9/hook', max_attempts => 100) \g /dev/null
SELECT idemgate.pause_effect_type('et_hook', 'ana', 'hold') \g /dev/null
SELECT is((SELECT count(*) FROM pg_temp.mk('et-3', 'et_hook', 2)), 2::bigint, 'two et_hook effects');
SELECT pg_sleep(2) \g /dev/null
SELECT results_eq($$SELECT state, attempts FROM idemgate.outbox WHERE effect_type = 'et_hook' ORDER BY target$$,
                  $$VALUES ('pending', 0), ('pending', 0)$$, 'the dispatcher attempts nothing of a paused type');
SELECT idemgate.resume_effect_type('et_hook', 'ana') \g /dev/null
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXIT WHEN (SELECT bool_and(attempts > 0) FROM idemgate.outbox WHERE effect_type = 'et_hook');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT is((SELECT bool_and(attempts > 0) FROM idemgate.outbox WHERE effect_type = 'et_hook'), true, 'after resume the dispatcher tries');
SELECT results_eq($$SELECT effect_type, has_endpoint, paused FROM idemgate.effect_types WHERE effect_type = 'et_hook'$$,
                  $$VALUES ('et_hook', true, false)$$, 'et_hook: an endpoint, not paused');

-- unregister_endpoint: audited, true once, false afterwards; the type stays
-- in effect_types (it still has effects), without an endpoint.
SELECT is(idemgate.unregister_endpoint('et_hook', 'ana'), true, 'unregister_endpoint: true');
SELECT is(idemgate.unregister_endpoint('et_hook', 'ana'), false, 'again: false');
SELECT is_empty($$SELECT * FROM idemgate.endpoints WHERE effect_type = 'et_hook'$$, 'no endpoint left');
SELECT results_eq($$SELECT kind, actor, details - 'role' FROM idemgate.events WHERE kind = 'endpoint_unregistered' ORDER BY id$$,
                  $$VALUES ('endpoint_unregistered', 'ana', '{"effect_type": "et_hook"}'::jsonb)$$, 'audited once');
SELECT results_eq($$SELECT effect_type, has_endpoint FROM idemgate.effect_types WHERE effect_type = 'et_hook'$$,
                  $$VALUES ('et_hook', false)$$, 'the type stays, without an endpoint');
-- An endpoint alone (no effects) is listed; so is a pause alone.
SELECT idemgate.register_endpoint('et_only_endpoint', 'http://127.0.0.1:9/x') \g /dev/null
SELECT results_eq($$SELECT effect_type, has_endpoint, paused, pending FROM idemgate.effect_types WHERE effect_type = 'et_only_endpoint'$$,
                  $$VALUES ('et_only_endpoint', true, false, 0::bigint)$$, 'an endpoint alone is listed');
SELECT idemgate.pause_effect_type('et_only_endpoint', 'ana', 'not yet') \g /dev/null
SELECT is(idemgate.unregister_endpoint('et_only_endpoint', 'ana'), true, 'its endpoint unregistered');
SELECT results_eq($$SELECT effect_type, has_endpoint, paused, pending FROM idemgate.effect_types WHERE effect_type = 'et_only_endpoint'$$,
                  $$VALUES ('et_only_endpoint', false, true, 0::bigint)$$, 'a pause alone is listed');
SELECT idemgate.resume_effect_type('et_only_endpoint', 'ana') \g /dev/null
SELECT is_empty($$SELECT * FROM idemgate.effect_types WHERE effect_type = 'et_only_endpoint'$$, 'neither: not listed');

-- not_before: a delayed effect is pending but not due until then.
SELECT is((SELECT count(*) FROM pg_temp.mk('et-4', 'et_later', 1, jsonb_build_object('not_before', now() + interval '1 hour'))),
          1::bigint, 'an effect not before an hour from now');
SELECT is((SELECT count(*) FROM pg_temp.mk('et-5', 'et_later', 1, jsonb_build_object('target', 'past', 'not_before', now() - interval '1 hour'))),
          1::bigint, 'an effect not before an hour ago');
SELECT results_eq($$SELECT target, state, next_attempt_at > now() + interval '59 minutes', next_attempt_at <= now()
                      FROM idemgate.outbox WHERE effect_type = 'et_later' ORDER BY target$$,
                  $$VALUES ('past', 'pending', false, true), ('target-1', 'pending', true, false)$$, 'the delayed one is not due');
SELECT results_eq($$SELECT pending, due FROM idemgate.effect_types WHERE effect_type = 'et_later'$$,
                  $$VALUES (2::bigint, 1::bigint)$$, 'two pending, one due');
SELECT results_eq($$SELECT target FROM idemgate.claim_effects('et_later', 10)$$, $$VALUES ('past')$$, 'only the due one is claimed');
-- Bad not_before: 22023 naming the field, nothing written.
SELECT throws_ok(q, '22023', m, q) FROM (VALUES
  ($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": "tomorrow-ish"}')$$,
   'effects[0].not_before must be a finite timestamp, not "tomorrow-ish"'),
  ($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": 12}')$$, 'effects[0].not_before must be a timestamp string'),
  ($$SELECT pg_temp.mk('et-6', 'et_later', 1, '{"not_before": "infinity"}')$$,
   'effects[0].not_before must be a finite timestamp, not "infinity"')
) AS t(q, m);
SELECT is_empty($$SELECT * FROM idemgate.runs WHERE idempotency_key = 'et-6'$$, 'nothing written');

-- Privileges: a reader sees effect_types but cannot pause or unregister.
CREATE ROLE et_reader;
SELECT idemgate.grant_role('et_reader', 'reader') \g /dev/null
SELECT is(pg_temp.as_role('et_reader', 'SELECT count(*) > 0 FROM idemgate.effect_types'), 'true', 'a reader sees effect_types');
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', 'et_reader', q), '42501', m, 'a reader: ' || q) FROM (VALUES
  ($$SELECT idemgate.pause_effect_type('et_mail', 'x', 'y')$$, 'permission denied for function pause_effect_type'),
  ($$SELECT idemgate.unregister_endpoint('et_mail', 'x')$$, 'permission denied for function unregister_endpoint')
) AS t(q, m);
SELECT idemgate.revoke_role('et_reader', 'reader') \g /dev/null
DROP ROLE et_reader;

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
