-- Kill switch ("interruptor de emergencia"): set_actions_enabled and
-- actions_enabled(). While off, claim_effects hands out nothing and queued
-- effects stay pending; claims keep working; after re-enabling, the held
-- effects go out. Effect types have no endpoint (no dispatcher sends them).
-- pgTAP.
\i test/sql/include/pgtap.psql

CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', jsonb_build_object('n', g)))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();

-- Bad input: all three arguments are required, actor and reason non-empty.
SELECT throws_ok(q, code, msg, q) FROM (VALUES
  ($$SELECT idemgate.set_actions_enabled(NULL, 'ops', 'why')$$, '22004', 'argument "enabled" must not be NULL'),
  ($$SELECT idemgate.set_actions_enabled(false, NULL, 'why')$$, '22004', 'argument "actor" must not be NULL'),
  ($$SELECT idemgate.set_actions_enabled(false, '', 'why')$$, '22023', 'argument "actor" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.set_actions_enabled(false, 'ops', NULL)$$, '22004', 'argument "reason" must not be NULL'),
  ($$SELECT idemgate.set_actions_enabled(false, 'ops', '')$$, '22023', 'argument "reason" must be between 1 and 2000 bytes long, not 0')
) AS t(q, code, msg);
SELECT results_eq($$SELECT idemgate.actions_enabled(), (SELECT actions_enabled FROM idemgate.control)$$,
                  $$VALUES (true, true)$$, 'nothing changed by the refused calls');

SELECT is((SELECT count(*) FROM pg_temp.mk('killswitch-1', 'killswitch_mail', 3)), 3::bigint, 'three effects queued');

-- Off: audited, claim_effects returns nothing, effects stay pending.
SELECT lives_ok($$SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'incident 42: duplicate mails')$$, 'switched off');
SELECT is(idemgate.actions_enabled(), false, 'actions_enabled() says off');
SELECT results_eq($$SELECT actions_enabled, changed_by, reason,
                           changed_at = (SELECT at FROM idemgate.events WHERE kind = 'actions_enabled_changed'
                                          ORDER BY id DESC LIMIT 1)
                      FROM idemgate.control$$,
                  $$VALUES (false, 'ops-oncall', 'incident 42: duplicate mails', true)$$,
                  'control row: who, why, and the same time as its event');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('killswitch_mail', 10)), 0::bigint, 'claim_effects hands out nothing while off');
SELECT results_eq($$SELECT state, attempts, lease_owner IS NULL, count(*) FROM idemgate.outbox
                     WHERE idempotency_key = 'killswitch-1' GROUP BY 1, 2, 3$$,
                  $$VALUES ('pending', 0, true, 3::bigint)$$, 'the effects stay pending, unowned, never attempted');
SELECT results_eq($$SELECT kind, actor, details FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1$$,
                  $$VALUES ('actions_enabled_changed', 'ops-oncall',
                            '{"reason": "incident 42: duplicate mails", "enabled": false, "setting": true, "previous": true}'::jsonb)$$,
                  'the switch-off is audited');
-- Claims keep working while off (only sends are held).
SELECT results_eq($$SELECT outcome, state FROM idemgate.claim('killswitch-claim', '{"a": 1}')$$,
                  $$VALUES ('claimed', 'processing')$$, 'claims keep working while off');
-- Turning it off twice is allowed and audited (previous: false).
SELECT lives_ok($$SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'still investigating')$$, 'switched off again');
SELECT is((SELECT details->>'previous' FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1),
          'false', 'audited with previous: false');

-- On again: the held effects are claimed, first attempt.
SELECT lives_ok($$SELECT idemgate.set_actions_enabled(true, 'ops-lead', 'fixed in release 1.2.3')$$, 'switched on');
SELECT is(idemgate.actions_enabled(), true, 'actions_enabled() says on');
SELECT results_eq($$SELECT attempt, count(*) FROM idemgate.claim_effects('killswitch_mail', 10) GROUP BY 1$$,
                  $$VALUES (1, 3::bigint)$$, 'the held effects are claimed, first attempt');
SELECT results_eq($$SELECT kind, actor, details FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1$$,
                  $$VALUES ('actions_enabled_changed', 'ops-lead',
                            '{"reason": "fixed in release 1.2.3", "enabled": true, "setting": true, "previous": false}'::jsonb)$$,
                  'the switch-on is audited');

-- Already-claimed effects are held too, not lost: their owner can still
-- record the outcome while the switch is off (a pull worker that already
-- sent must be able to say so).
SELECT lives_ok($$SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'incident 43')$$, 'switched off with effects claimed');
SELECT is((SELECT count(*) FILTER (WHERE idemgate.complete_effect(effect_id, lease_owner))
             FROM idemgate.outbox WHERE idempotency_key = 'killswitch-1'), 3::bigint,
          'their owner completes them while off');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'killswitch-1'), 'completed', 'and the run completes');

-- Privileges: a client may read the switch but not flip it; a reader may read it.
CREATE ROLE regress_killswitch_client;
CREATE ROLE regress_killswitch_reader;
SELECT idemgate.grant_role('regress_killswitch_client', 'client') \g /dev/null
SELECT idemgate.grant_role('regress_killswitch_reader', 'reader') \g /dev/null
SELECT is(pg_temp.as_role('regress_killswitch_client', 'SELECT idemgate.actions_enabled()'), 'false', 'a client reads the switch');
SELECT throws_ok($$SELECT pg_temp.as_role('regress_killswitch_client', $q$SELECT idemgate.set_actions_enabled(true, 'mallory', 'let me')$q$)$$,
                 '42501', 'permission denied for function set_actions_enabled', 'a client may not flip it');
SELECT throws_ok($$SELECT pg_temp.as_role('regress_killswitch_client', 'UPDATE idemgate.control SET actions_enabled = true')$$,
                 '42501', 'permission denied for table control', 'nor write the control table');
SELECT is(pg_temp.as_role('regress_killswitch_reader', 'SELECT idemgate.actions_enabled()'), 'false', 'a reader reads the switch');
SELECT throws_ok($$SELECT pg_temp.as_role('regress_killswitch_reader', $q$SELECT idemgate.set_actions_enabled(true, 'mallory', 'let me')$q$)$$,
                 '42501', 'permission denied for function set_actions_enabled', 'a reader may not flip it');
SELECT is(idemgate.actions_enabled(), false, 'still off');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;

-- Leave the switch on for the files that follow; clean up.
SELECT idemgate.set_actions_enabled(true, 'regress', 'end of killswitch test') \g /dev/null
SELECT idemgate.revoke_role('regress_killswitch_client', 'client') \g /dev/null
SELECT idemgate.revoke_role('regress_killswitch_reader', 'reader') \g /dev/null
DELETE FROM idemgate.granted_bundles WHERE role::text LIKE 'regress_killswitch_%';
DROP OWNED BY regress_killswitch_client, regress_killswitch_reader;
DROP ROLE regress_killswitch_client;
DROP ROLE regress_killswitch_reader;
DELETE FROM idemgate.outbox WHERE idempotency_key LIKE 'killswitch-%';
DELETE FROM idemgate.approvals WHERE idempotency_key LIKE 'killswitch-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'killswitch-%';
