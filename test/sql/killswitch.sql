-- Kill switch ("interruptor de emergencia"): set_actions_enabled and
-- actions_enabled(). While off, claim_effects hands out nothing and queued
-- effects stay pending; claims keep working; after re-enabling, the held
-- effects go out. Effect types have no endpoint (no dispatcher sends them).
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', jsonb_build_object('n', g)))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;

-- Bad input: all three arguments are required, actor and reason non-empty.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(NULL, 'ops', 'why')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(false, NULL, 'why')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(false, '', 'why')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(false, 'ops', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(false, 'ops', '')$$);
-- nothing changed by the refused calls
SELECT idemgate.actions_enabled(), (SELECT actions_enabled FROM idemgate.control);

SELECT count(*) FROM pg_temp.mk('killswitch-1', 'killswitch_mail', 3);

-- Off: audited, claim_effects returns nothing, effects stay pending.
SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'incident 42: duplicate mails');
SELECT idemgate.actions_enabled();
SELECT actions_enabled, changed_by, reason, changed_at = (SELECT at FROM idemgate.events WHERE kind = 'actions_enabled_changed'
                           ORDER BY id DESC LIMIT 1) AS audited_at_same_time
FROM idemgate.control;
SELECT count(*) AS claimed_while_off FROM idemgate.claim_effects('killswitch_mail', 10);
SELECT state, attempts, lease_owner IS NULL AS unowned, count(*) FROM idemgate.outbox
WHERE idempotency_key = 'killswitch-1' GROUP BY 1, 2, 3;
SELECT kind, actor, details FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1;
-- Claims keep working while off (only sends are held).
SELECT outcome, state FROM idemgate.claim('killswitch-claim', '{"a": 1}');
-- Turning it off twice is allowed and audited (previous: false).
SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'still investigating');
SELECT details->>'previous' AS previous FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1;

-- On again: the held effects are claimed, first attempt.
SELECT idemgate.set_actions_enabled(true, 'ops-lead', 'fixed in release 1.2.3');
SELECT idemgate.actions_enabled();
SELECT attempt, count(*) FROM idemgate.claim_effects('killswitch_mail', 10) GROUP BY 1;
SELECT kind, actor, details FROM idemgate.events WHERE kind = 'actions_enabled_changed' ORDER BY id DESC LIMIT 1;

-- Already-claimed effects are held too, not lost: their owner can still
-- record the outcome while the switch is off (a pull worker that already
-- sent must be able to say so).
SELECT idemgate.set_actions_enabled(false, 'ops-oncall', 'incident 43');
SELECT count(*) FILTER (WHERE idemgate.complete_effect(effect_id, lease_owner)) AS completed
FROM idemgate.outbox WHERE idempotency_key = 'killswitch-1';
SELECT state FROM idemgate.runs WHERE idempotency_key = 'killswitch-1';

-- Privileges: a client may read the switch but not flip it; a reader may read it.
CREATE ROLE regress_killswitch_client;
CREATE ROLE regress_killswitch_reader;
SELECT idemgate.grant_role('regress_killswitch_client', 'client');
SELECT idemgate.grant_role('regress_killswitch_reader', 'reader');
SET ROLE regress_killswitch_client;
SELECT idemgate.actions_enabled() AS client_reads;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(true, 'mallory', 'let me')$$);
SELECT pg_temp.sqlstate_of($$UPDATE idemgate.control SET actions_enabled = true$$);
RESET ROLE;
SET ROLE regress_killswitch_reader;
SELECT idemgate.actions_enabled() AS reader_reads;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.set_actions_enabled(true, 'mallory', 'let me')$$);
RESET ROLE;
SELECT idemgate.actions_enabled() AS still_off;

-- Leave the switch on for the files that follow; clean up.
SELECT idemgate.set_actions_enabled(true, 'regress', 'end of killswitch test');
SELECT idemgate.revoke_role('regress_killswitch_client', 'client');
SELECT idemgate.revoke_role('regress_killswitch_reader', 'reader');
DELETE FROM idemgate.granted_bundles WHERE role::text LIKE 'regress_killswitch_%';
DROP OWNED BY regress_killswitch_client, regress_killswitch_reader;
DROP ROLE regress_killswitch_client;
DROP ROLE regress_killswitch_reader;
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'killswitch-%';
