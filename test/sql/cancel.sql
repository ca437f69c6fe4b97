-- cancel_effect and cancel_approval (SPEC §14). A pending or unknown effect
-- can be cancelled (state cancelled: never claimed afterwards, no dead
-- letter); any other state is IG002, an unknown id IG003. A run whose
-- effects are all settled completes; purge treats cancelled as settled.
-- An undecided approval can be cancelled by an operator: its run fails
-- like a rejection (no dead letter); decided or expired ones answer
-- invalid. Types have no endpoint: only claim_effects takes them.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9a-f-]{36}', '<id>', 'g'); END $$;
CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g, 'payload', '{}'))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;
CREATE TEMP TABLE fx AS
SELECT 'cx-1'::text AS k, id, row_number() OVER () AS n FROM pg_temp.mk('cx-1', 'cx_mail', 3) id;

-- Bad arguments: nothing changes.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cancel_effect(NULL, 'ops', 'why')$$);
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_effect(%L, NULL, 'why')$$, (SELECT id FROM fx WHERE n = 1)));
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_effect(%L, 'ops', '')$$, (SELECT id FROM fx WHERE n = 1)));
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cancel_effect('00000000-0000-0000-0000-000000000000', 'ops', 'why')$$);
SELECT state, count(*) FROM idemgate.outbox WHERE idempotency_key = 'cx-1' GROUP BY state;

-- Cancel a pending effect: cancelled, audited, no dead letter, never claimed.
SELECT idemgate.cancel_effect((SELECT id FROM fx WHERE n = 1), 'ana', 'customer asked');
SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'cx-1' ORDER BY target;
SELECT kind, actor, details FROM idemgate.events WHERE kind = 'effect_cancelled';
SELECT count(*) AS dead_letters FROM idemgate.dead_letters WHERE idempotency_key = 'cx-1';
SELECT target FROM idemgate.claim_effects('cx_mail', 10) ORDER BY target;
-- Cancelling it again, or a sending effect, is IG002.
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_effect(%L, 'ana', 'again')$$, (SELECT id FROM fx WHERE n = 1)));
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_effect(%L, 'ana', 'too late')$$, (SELECT id FROM fx WHERE n = 2)));
-- Complete one, make the other unknown, then cancel the unknown one: every
-- effect is settled (completed or cancelled), so the run completes.
SELECT idemgate.complete_effect(o.effect_id, o.lease_owner, 'prov-2') FROM idemgate.outbox o
 WHERE o.effect_id = (SELECT id FROM fx WHERE n = 2);
SELECT idemgate.fail_effect(o.effect_id, o.lease_owner, 'timeout_after_send', 'no answer') FROM idemgate.outbox o
 WHERE o.effect_id = (SELECT id FROM fx WHERE n = 3);
SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-1';
-- a completed effect cannot be cancelled
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_effect(%L, 'ana', 'late')$$, (SELECT id FROM fx WHERE n = 2)));
SELECT idemgate.cancel_effect((SELECT id FROM fx WHERE n = 3), 'ana', 'checked: never arrived, not wanted any more');
SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'cx-1' ORDER BY target;
SELECT state, result -> 'effects' IS NOT NULL AS has_effects_result FROM idemgate.runs WHERE idempotency_key = 'cx-1';
SELECT count(*) AS dead_letters FROM idemgate.dead_letters WHERE idempotency_key = 'cx-1';
-- Purge treats cancelled as settled: the finished run goes.
UPDATE idemgate.runs SET updated_at = now() - interval '2 days' WHERE idempotency_key = 'cx-1';
SELECT idemgate.purge('1 day') >= 1 AS purged;
SELECT count(*) AS left_behind FROM idemgate.outbox WHERE idempotency_key = 'cx-1';

-- cancel_approval.
CREATE FUNCTION pg_temp.ask(k text, expires interval DEFAULT '1 hour') RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE c record; a record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  SELECT * INTO a FROM idemgate.request_approval(k, c.lease_owner, c.version,
    '{"type": "cx_mail", "target": "t", "payload": {}}', expires);
  RETURN a.approval_id;
END $$;
CREATE TEMP TABLE ap AS SELECT pg_temp.ask('cx-ap-1') AS id;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cancel_approval(NULL, 'ops', 'why')$$);
SELECT pg_temp.sqlstate_of(format($$SELECT idemgate.cancel_approval(%L, 'ops', NULL)$$, (SELECT id FROM ap)));
SELECT pg_temp.sqlstate_of($$SELECT idemgate.cancel_approval('00000000-0000-0000-0000-000000000000', 'ops', 'why')$$);
SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-1';
SELECT idemgate.cancel_approval((SELECT id FROM ap), 'ana', 'requester lost its lease');
SELECT r.state, r.result, a.decision, a.approver_subject, a.consumed_at IS NOT NULL AS consumed
  FROM idemgate.runs r JOIN idemgate.approvals a USING (idempotency_key) WHERE r.idempotency_key = 'cx-ap-1';
SELECT status FROM idemgate.approval_status WHERE idempotency_key = 'cx-ap-1';
SELECT kind, actor, details - 'approval_id' - 'info' AS details FROM idemgate.events
 WHERE idempotency_key = 'cx-ap-1' AND kind IN ('approval_cancelled', 'state_changed') ORDER BY id;
SELECT count(*) AS dead_letters, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'cx-ap-1') AS effects
  FROM idemgate.dead_letters WHERE idempotency_key = 'cx-ap-1';
-- A cancelled approval is not counted as decided by a human.
SELECT count(*) AS decided_events FROM idemgate.events WHERE idempotency_key = 'cx-ap-1' AND kind = 'approval_decided';
-- Already decided: invalid, nothing changes.
SELECT idemgate.cancel_approval((SELECT id FROM ap), 'ana', 'again');
-- Expired: invalid, the run is left to expire_approvals.
SELECT pg_temp.ask('cx-ap-2', '1 hour') IS NOT NULL AS asked;
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second' WHERE idempotency_key = 'cx-ap-2';
SELECT idemgate.cancel_approval(a.approval_id, 'ana', 'too late') FROM idemgate.approvals a WHERE a.idempotency_key = 'cx-ap-2';
SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-2';
-- Settle it now, not whenever the dispatcher's expire_approvals runs: a
-- dead letter made later would land in the next test's time window.
SELECT idemgate.expire_approvals() >= 0 AS settled;
SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-2';
