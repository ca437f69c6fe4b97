-- cancel_effect and cancel_approval (docs/operations.md). A pending or unknown effect
-- can be cancelled (state cancelled: never claimed afterwards, no dead
-- letter); any other state is IG002, an unknown id IG003. A run whose
-- effects are all settled completes; purge treats cancelled as settled.
-- An undecided approval can be cancelled by an operator: its run fails
-- like a rejection (no dead letter); decided or expired ones answer
-- invalid. Types have no endpoint: only claim_effects takes them. pgTAP.
\i test/sql/include/pgtap.psql
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
SELECT * FROM no_plan();

-- Bad arguments: nothing changes.
SELECT throws_ok($$SELECT idemgate.cancel_effect(NULL, 'ops', 'why')$$, '22004', 'argument "effect_id" must not be NULL', 'a NULL effect_id');
SELECT throws_ok(format($$SELECT idemgate.cancel_effect(%L, NULL, 'why')$$, id), '22004', 'argument "actor" must not be NULL', 'a NULL actor')
  FROM fx WHERE n = 1;
SELECT throws_ok(format($$SELECT idemgate.cancel_effect(%L, 'ops', '')$$, id), '22023',
                 'argument "reason" must be between 1 and 2000 bytes long, not 0', 'an empty reason') FROM fx WHERE n = 1;
SELECT throws_ok($$SELECT idemgate.cancel_effect('00000000-0000-0000-0000-000000000000', 'ops', 'why')$$, 'IG003',
                 'effect 00000000-0000-0000-0000-000000000000 does not exist', 'an unknown effect: IG003');
SELECT results_eq($$SELECT state, count(*) FROM idemgate.outbox WHERE idempotency_key = 'cx-1' GROUP BY state$$,
                  $$VALUES ('pending', 3::bigint)$$, 'nothing changed: three pending');

-- Cancel a pending effect: cancelled, audited, no dead letter, never claimed.
SELECT is(idemgate.cancel_effect((SELECT id FROM fx WHERE n = 1), 'ana', 'customer asked'), 'cancelled', 'a pending effect is cancelled');
SELECT results_eq($$SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'cx-1' ORDER BY target$$,
                  $$VALUES ('target-1', 'cancelled'), ('target-2', 'pending'), ('target-3', 'pending')$$, 'only target-1 is cancelled');
SELECT results_eq($$SELECT kind, actor, details FROM idemgate.events WHERE kind = 'effect_cancelled'$$,
                  $$VALUES ('effect_cancelled', 'ana', '{"reason": "customer asked", "effect_type": "cx_mail", "previous_state": "pending"}'::jsonb)$$,
                  'audited');
SELECT is_empty($$SELECT id FROM idemgate.dead_letters WHERE idempotency_key = 'cx-1'$$, 'no dead letter');
SELECT results_eq($$SELECT target FROM idemgate.claim_effects('cx_mail', 10) ORDER BY target$$,
                  $$VALUES ('target-2'), ('target-3')$$, 'the cancelled effect is never claimed');
-- Cancelling it again, or a sending effect, is IG002.
SELECT throws_ok(format($$SELECT idemgate.cancel_effect(%L, 'ana', %L)$$, id, r), 'IG002',
                 format('effect %s is %s; only pending or unknown effects can be cancelled', id, s), 'a ' || s || ' effect: IG002')
  FROM fx JOIN (VALUES (1, 'again', 'cancelled'), (2, 'too late', 'sending')) AS t(tn, r, s) ON t.tn = fx.n ORDER BY n;
-- Complete one, make the other unknown, then cancel the unknown one: every
-- effect is settled (completed or cancelled), so the run completes.
SELECT is((SELECT idemgate.complete_effect(o.effect_id, o.lease_owner, 'prov-2') FROM idemgate.outbox o
            WHERE o.effect_id = (SELECT id FROM fx WHERE n = 2)), true, 'target-2 completed');
SELECT is((SELECT idemgate.fail_effect(o.effect_id, o.lease_owner, 'timeout_after_send', 'no answer') FROM idemgate.outbox o
            WHERE o.effect_id = (SELECT id FROM fx WHERE n = 3)), 'unknown', 'target-3 unknown');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-1'), 'approved', 'the run is still approved');
-- a completed effect cannot be cancelled
SELECT throws_ok(format($$SELECT idemgate.cancel_effect(%L, 'ana', 'late')$$, id), 'IG002',
                 format('effect %s is completed; only pending or unknown effects can be cancelled', id), 'a completed effect: IG002')
  FROM fx WHERE n = 2;
SELECT is(idemgate.cancel_effect((SELECT id FROM fx WHERE n = 3), 'ana', 'checked: never arrived, not wanted any more'), 'cancelled',
          'an unknown effect is cancelled');
SELECT results_eq($$SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'cx-1' ORDER BY target$$,
                  $$VALUES ('target-1', 'cancelled'), ('target-2', 'completed'), ('target-3', 'cancelled')$$, 'every effect settled');
SELECT results_eq($$SELECT state, result -> 'effects' IS NOT NULL FROM idemgate.runs WHERE idempotency_key = 'cx-1'$$,
                  $$VALUES ('completed', true)$$, 'the run completes, with its effects result');
SELECT is_empty($$SELECT id FROM idemgate.dead_letters WHERE idempotency_key = 'cx-1'$$, 'still no dead letter');
-- Purge treats cancelled as settled: the finished run goes.
UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days' WHERE idempotency_key = 'cx-1';
SELECT ok(idemgate.purge('1 day') >= 1, 'purge takes the finished run');
SELECT is_empty($$SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'cx-1'$$, 'nothing left behind');

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
SELECT throws_ok($$SELECT idemgate.cancel_approval(NULL, 'ops', 'why')$$, '22004', 'argument "approval_id" must not be NULL',
                 'a NULL approval_id');
SELECT throws_ok(format($$SELECT idemgate.cancel_approval(%L, 'ops', NULL)$$, id), '22004', 'argument "reason" must not be NULL',
                 'a NULL reason') FROM ap;
SELECT throws_ok($$SELECT idemgate.cancel_approval('00000000-0000-0000-0000-000000000000', 'ops', 'why')$$, 'IG003',
                 'approval 00000000-0000-0000-0000-000000000000 does not exist', 'an unknown approval: IG003');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-1'), 'awaiting_human', 'nothing changed');
SELECT is(idemgate.cancel_approval((SELECT id FROM ap), 'ana', 'requester lost its lease'), 'cancelled', 'an undecided approval is cancelled');
SELECT results_eq($$SELECT r.state, r.result, a.decision, a.approver_subject, a.consumed_at IS NOT NULL
                      FROM idemgate.runs r JOIN idemgate.approvals a USING (idempotency_key) WHERE r.idempotency_key = 'cx-ap-1'$$,
                  $$VALUES ('failed_terminal', '{"reason": "requester lost its lease", "decision": "cancelled", "cancelled_by": "ana"}'::jsonb,
                            'cancelled', 'ana', true)$$,
                  'the run fails like a rejection; the approval is consumed');
SELECT is((SELECT status FROM idemgate.approval_status WHERE idempotency_key = 'cx-ap-1'), 'consumed', 'approval_status: consumed');
SELECT results_eq($$SELECT kind, actor, details - 'approval_id' - 'expires_at' - 'processing_ms' FROM idemgate.events
                     WHERE idempotency_key = 'cx-ap-1' AND kind IN ('approval_requested', 'approval_cancelled', 'state_changed')
                     ORDER BY id$$,
                  $$VALUES ('approval_requested', NULL::text, '{"to": "awaiting_human", "from": "processing", "version": 1, "effect_count": 1}'::jsonb),
                           ('approval_cancelled', 'ana', '{"to": "failed_terminal", "from": "awaiting_human", "version": 2,
                                                           "reason": "requester lost its lease"}'::jsonb)$$,
                  'audited: each action with the state change it made');
SELECT results_eq($$SELECT count(*), (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'cx-ap-1')
                      FROM idemgate.dead_letters WHERE idempotency_key = 'cx-ap-1'$$,
                  $$VALUES (0::bigint, 0::bigint)$$, 'no dead letter, no effect');
-- A cancelled approval is not counted as decided by a human.
SELECT is_empty($$SELECT id FROM idemgate.events WHERE idempotency_key = 'cx-ap-1' AND kind = 'approval_decided'$$,
                'no approval_decided event');
-- Already decided: invalid, nothing changes.
SELECT is(idemgate.cancel_approval((SELECT id FROM ap), 'ana', 'again'), 'invalid', 'already decided: invalid');
-- Expired: invalid, the run is left to expire_approvals.
SELECT ok(pg_temp.ask('cx-ap-2', '1 hour') IS NOT NULL, 'cx-ap-2 asked');
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second' WHERE idempotency_key = 'cx-ap-2';
SELECT is((SELECT idemgate.cancel_approval(a.approval_id, 'ana', 'too late') FROM idemgate.approvals a WHERE a.idempotency_key = 'cx-ap-2'),
          'invalid', 'expired: invalid');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-2'), 'awaiting_human', 'the run is left to expire_approvals');
-- Settle it now, not whenever the dispatcher's expire_approvals runs: a
-- dead letter made later would land in the next test's time window.
SELECT ok(idemgate.expire_approvals() >= 0, 'expire_approvals');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'cx-ap-2'), 'failed_terminal', 'expired: failed_terminal');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
