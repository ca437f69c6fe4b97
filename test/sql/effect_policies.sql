-- effect_policies: the policy of an effect type, enforced by the database
-- (README.md "Effect policies"). set_effect_policy checks its arguments
-- and is audited; requires_approval makes enqueue_effect refuse the type
-- with 42501 naming the policy (only an approved request_approval puts it
-- in the outbox); requires_requester makes request_approval need
-- requested_by and an audience (22004); review_sample 1.0 turns every
-- automatic call into an approval request (review_requested carries the
-- approval id and the token once) and 0.0 none, and reviews_requested
-- counts them; cancel_window holds automatic effects until it ends
-- (not_before, outbox.cancel_until) and an approver may cancel them
-- meanwhile with cancel_in_window, never afterwards nor effects without a
-- window. Effect types (ep_*) have no endpoint. Everything runs in one
-- transaction that is rolled back (policies, roles, rows), so now() is
-- constant and nothing leaks into other files. pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
BEGIN;
CREATE ROLE ep_client; CREATE ROLE ep_approver; CREATE ROLE ep_reader; CREATE ROLE ep_operator;
SELECT idemgate.grant_role('ep_client', 'client'), idemgate.grant_role('ep_approver', 'approver'),
       idemgate.grant_role('ep_reader', 'reader'), idemgate.grant_role('ep_operator', 'operator') \g /dev/null

-- run(k) claims key k and keeps its owner and version in table r.
CREATE TEMP TABLE r (k text PRIMARY KEY, owner uuid, version bigint);
CREATE FUNCTION pg_temp.run(p_k text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(p_k, jsonb_build_object('k', p_k), '1 hour', 'ep-workflow');
  INSERT INTO r VALUES (p_k, c.lease_owner, c.version);
END $$;
-- enq(k, effects): enqueue_effect as the owner of k.
CREATE FUNCTION pg_temp.enq(p_k text, p_effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb) LANGUAGE sql AS $$
  SELECT e.effect_ids, e.version, e.review_requested
    FROM r, idemgate.enqueue_effect(r.k, r.owner, r.version, p_effects) e WHERE r.k = p_k $$;
CREATE FUNCTION pg_temp.fx(t text, target text DEFAULT 'x') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('type', t, 'target', target, 'payload', jsonb_build_object('to', target)) $$;

SELECT * FROM no_plan();

-- Bad arguments: 22004 for NULL where a value is required, 22023 otherwise,
-- each naming the argument; nothing is written.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.set_effect_policy(NULL, true)$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.set_effect_policy('', true)$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.set_effect_policy(repeat('t', 201), true)$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 201'),
  ($$SELECT idemgate.set_effect_policy('ep_x', NULL)$$, '22004', 'argument "requires_approval" must not be NULL'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, NULL)$$, '22004', 'argument "requires_requester" must not be NULL'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, false, NULL)$$, '22004', 'argument "review_sample" must not be NULL'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, false, 1.5)$$, '22023', 'argument "review_sample" must be between 0 and 1, not 1.5'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, false, -0.1)$$, '22023', 'argument "review_sample" must be between 0 and 1, not -0.1'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, false, 'NaN')$$, '22023', 'argument "review_sample" must be between 0 and 1, not NaN'),
  ($$SELECT idemgate.set_effect_policy('ep_x', cancel_window => '0 s')$$, '22023',
   'argument "cancel_window" must be greater than 0 s and at most 604800 s'),
  ($$SELECT idemgate.set_effect_policy('ep_x', cancel_window => '-1 min')$$, '22023',
   'argument "cancel_window" must be greater than 0 s and at most 604800 s'),
  ($$SELECT idemgate.set_effect_policy('ep_x', cancel_window => '8 days')$$, '22023',
   'argument "cancel_window" must be greater than 0 s and at most 604800 s'),
  ($$SELECT idemgate.set_effect_policy('ep_x', true, actor => '')$$, '22023', 'argument "actor" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT idemgate.set_effect_policy('idemgate.rerun:x', true)$$, '22023', 'effect type "idemgate.rerun:x" is reserved'),
  ($$SELECT idemgate.set_effect_policy('ep_x', true, review_sample => 0.5)$$, '22023',
   'argument "review_sample" must be 0 when requires_approval is true'),
  ($$SELECT idemgate.set_effect_policy('ep_x', true, cancel_window => '5 min')$$, '22023',
   'argument "cancel_window" must be NULL when requires_approval is true'),
  ($$SELECT idemgate.set_effect_policy('ep_x', false, true, 0.5)$$, '22023',
   'argument "review_sample" must be 0 when requires_requester is true')
) AS t(q, code, m);
SELECT is_empty($$SELECT * FROM idemgate.effect_policies WHERE effect_type = 'ep_x'$$, 'the refusals wrote nothing');

-- Only an operator sets a policy; readers read them; clients and
-- approvers see neither the view nor the table.
SELECT throws_ok(format($$SELECT pg_temp.as_role(%L, 'SELECT idemgate.set_effect_policy(''ep_x'', true)')$$, r), '42501', NULL,
                 r || ' may not set a policy')
  FROM unnest(ARRAY['ep_client', 'ep_approver', 'ep_reader']) r;
SELECT lives_ok($$SELECT pg_temp.as_role('ep_operator', 'SELECT idemgate.set_effect_policy(''ep_x'', true)')$$,
                'an operator sets a policy');
SELECT is(pg_temp.as_role('ep_reader', 'SELECT requires_approval::text FROM idemgate.effect_policies WHERE effect_type = ''ep_x'''),
          'true', 'a reader reads the policies');
SELECT throws_ok(format($$SELECT pg_temp.as_role(%L, 'SELECT count(*) FROM idemgate.effect_policies')$$, r), '42501', NULL,
                 r || ' may not read the policies')
  FROM unnest(ARRAY['ep_client', 'ep_approver']) r;
SELECT throws_ok($$SELECT pg_temp.as_role('ep_reader', 'SELECT count(*) FROM idemgate.effect_type_policies')$$, '42501', NULL,
                 'the table itself is the operators''');

-- Audited: who (actor, or the calling role by default), what, created or replaced.
SELECT idemgate.set_effect_policy('ep_x', false, false, 0.25, '90 seconds', 'ana') \g /dev/null
SELECT results_eq($$SELECT actor, details FROM idemgate.events WHERE kind = 'effect_policy_set' AND details->>'effect_type' = 'ep_x' ORDER BY id$$,
                  $$VALUES ('ep_operator', '{"created": true, "effect_type": "ep_x", "review_sample": 0, "requires_approval": true, "requires_requester": false}'::jsonb),
                           ('ana', '{"created": false, "effect_type": "ep_x", "review_sample": 0.25, "requires_approval": false, "requires_requester": false, "cancel_window_seconds": 90}'::jsonb)$$,
                  'each change is an effect_policy_set event');
SELECT results_eq($$SELECT requires_approval, requires_requester, review_sample, cancel_window, reviews_requested, updated_by
                      FROM idemgate.effect_policies WHERE effect_type = 'ep_x'$$,
                  $$VALUES (false, false, 0.25::real, interval '90 seconds', 0::bigint, 'ana')$$, 'the view shows the policy as set');

-- requires_approval: enqueue_effect refuses the type with 42501 naming the
-- policy, also beside a type without a policy, and nothing changes.
SELECT idemgate.set_effect_policy('ep_refund', requires_approval => true, actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-refund-1') \g /dev/null
SELECT throws_ok($$SELECT * FROM pg_temp.enq('ep-refund-1', pg_temp.fx('ep_refund'))$$, '42501',
                 'effect type "ep_refund" requires approval (effect policy requires_approval); enqueue_effect may not send it',
                 'enqueue_effect refuses a type that requires approval');
SELECT throws_ok($$SELECT * FROM pg_temp.enq('ep-refund-1', jsonb_build_array(pg_temp.fx('ep_free'), pg_temp.fx('ep_refund')))$$, '42501',
                 'effect type "ep_refund" requires approval (effect policy requires_approval); enqueue_effect may not send it',
                 'also beside an effect of a free type');
SELECT throws_ok($$SELECT * FROM idemgate.enqueue_effect(jsonb_build_object('key', 'ep-refund-1', 'owner', (SELECT owner FROM r WHERE k = 'ep-refund-1'),
                                                                              'version', 0, 'effects', pg_temp.fx('ep_refund')))$$, '42501',
                 'effect type "ep_refund" requires approval (effect policy requires_approval); enqueue_effect may not send it',
                 'and through the jsonb form');
SELECT results_eq($$SELECT state, version, (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'ep-refund-1')
                      FROM idemgate.runs WHERE idempotency_key = 'ep-refund-1'$$,
                  $$VALUES ('processing', 0::bigint, 0::bigint)$$, 'the refusals changed nothing');
-- The human path still works: request_approval, then an approval puts it in the outbox.
CREATE TEMP TABLE asked AS
  SELECT a.* FROM r, idemgate.request_approval(r.k, r.owner, r.version, pg_temp.fx('ep_refund'), '1 hour') a WHERE r.k = 'ep-refund-1';
SELECT results_eq($$SELECT c.outcome, cardinality(c.effect_ids) FROM asked, idemgate.consume_approval(asked.token, 'approve', 'maria') c$$,
                  $$VALUES ('approved', 1)$$, 'an approved request puts it in the outbox');
SELECT results_eq($$SELECT effect_type, state, cancel_until FROM idemgate.outbox WHERE idempotency_key = 'ep-refund-1'$$,
                  $$VALUES ('ep_refund', 'pending', NULL::timestamptz)$$, 'pending, as approved');
-- Lifting the policy lets enqueue_effect through again.
SELECT idemgate.set_effect_policy('ep_refund', actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-refund-2') \g /dev/null
SELECT results_eq($$SELECT cardinality(effect_ids), version, review_requested FROM pg_temp.enq('ep-refund-2', pg_temp.fx('ep_refund'))$$,
                  $$VALUES (1, 1::bigint, NULL::jsonb)$$, 'with the policy lifted, enqueue_effect sends it');

-- requires_requester: request_approval needs requested_by and a non-empty audience.
SELECT idemgate.set_effect_policy('ep_mail', requires_requester => true, actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-mail-1') \g /dev/null
SELECT throws_ok(format($$SELECT * FROM idemgate.request_approval('ep-mail-1', %L, 0, %L, '1 hour', NULL, %s, %s)$$,
                        (SELECT owner FROM r WHERE k = 'ep-mail-1'), pg_temp.fx('ep_mail'), aud, req), '22004', m, d)
  FROM (VALUES
    ('ARRAY[''joan'']', 'NULL', 'argument "requested_by" must not be NULL: effect type "ep_mail" requires a requester (effect policy requires_requester)',
     'requires_requester: no requested_by'),
    ('NULL', '''n8n:mail''', 'argument "audience" must name at least one approver: effect type "ep_mail" requires a requester and an audience (effect policy requires_requester)',
     'requires_requester: no audience'),
    ('''{}''::text[]', '''n8n:mail''', 'argument "audience" must name at least one approver: effect type "ep_mail" requires a requester and an audience (effect policy requires_requester)',
     'requires_requester: an empty audience')) AS t(aud, req, m, d);
SELECT throws_ok(format($$SELECT * FROM idemgate.request_approval(jsonb_build_object('key', 'ep-mail-1', 'owner', %L, 'version', 0,
                                                                                      'effects', jsonb_build_array(pg_temp.fx('ep_free'), pg_temp.fx('ep_mail')),
                                                                                      'audience', ARRAY['joan']))$$,
                        (SELECT owner FROM r WHERE k = 'ep-mail-1')), '22004',
                 'argument "requested_by" must not be NULL: effect type "ep_mail" requires a requester (effect policy requires_requester)',
                 'requires_requester: the jsonb form, one effect of the type among others');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'ep-mail-1'), 'processing', 'the refusals changed nothing');
SELECT results_eq(format($$SELECT version FROM idemgate.request_approval('ep-mail-1', %L, 0, %L, '1 hour', NULL, ARRAY['joan'], 'n8n:mail')$$,
                         (SELECT owner FROM r WHERE k = 'ep-mail-1'), pg_temp.fx('ep_mail')),
                  $$VALUES (1::bigint)$$, 'with requested_by and an audience, the request is made');
SELECT pg_temp.run('ep-mail-2') \g /dev/null
SELECT results_eq(format($$SELECT version FROM idemgate.request_approval('ep-mail-2', %L, 0, %L, '1 hour')$$,
                         (SELECT owner FROM r WHERE k = 'ep-mail-2'), pg_temp.fx('ep_free')),
                  $$VALUES (1::bigint)$$, 'a type without the policy needs neither');
SELECT pg_temp.run('ep-mail-3') \g /dev/null
SELECT results_eq($$SELECT cardinality(effect_ids), review_requested FROM pg_temp.enq('ep-mail-3', pg_temp.fx('ep_mail'))$$,
                  $$VALUES (1, NULL::jsonb)$$, 'requires_requester alone leaves the automatic path open');

-- review_sample 1.0: every automatic call becomes an approval request. The
-- result has no effect ids, the run's new version and review_requested
-- with the approval id and the token (43 base64url characters, only its
-- SHA-256 stored); the run awaits a human; nothing is in the outbox.
SELECT idemgate.set_effect_policy('ep_sampled', review_sample => 1.0, actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-s-' || g) FROM generate_series(1, 5) g \g /dev/null
CREATE TEMP TABLE reviews AS
  SELECT r.k, e.* FROM r, pg_temp.enq(r.k, jsonb_build_array(pg_temp.fx('ep_sampled'), pg_temp.fx('ep_free', 'y'))) e
   WHERE r.k LIKE 'ep-s-%';
SELECT results_eq($$SELECT count(*), bool_and(effect_ids = '{}'), bool_and(version = 1),
                           bool_and(review_requested->>'token' ~ '^[A-Za-z0-9_-]{43}$'),
                           bool_and(review_requested->'effect_types' = '["ep_sampled"]'),
                           bool_and(review_requested->'review_sample' = '1')
                      FROM reviews$$,
                  $$VALUES (5::bigint, true, true, true, true, true)$$, 'review_sample 1.0: all five calls are reviews');
SELECT results_eq($$SELECT count(*) FILTER (WHERE ru.state = 'awaiting_human' AND ru.version = 1),
                           count(*) FILTER (WHERE a.token_hash = idemgate.hash_token(rv.review_requested->>'token')
                                              AND a.expires_at = (rv.review_requested->>'expires_at')::timestamptz
                                              AND a.expires_at = now() + interval '24 hours'
                                              AND a.effects = jsonb_build_array(pg_temp.fx('ep_sampled'), pg_temp.fx('ep_free', 'y'))
                                              AND a.card->>'review' = 'sampled' AND a.requested_by IS NULL AND a.run_version = 1),
                           (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key LIKE 'ep-s-%')
                      FROM reviews rv
                      JOIN idemgate.runs ru ON ru.idempotency_key = rv.k
                      JOIN idemgate.approvals a ON a.approval_id = (rv.review_requested->>'approval_id')::uuid$$,
                  $$VALUES (5::bigint, 5::bigint, 0::bigint)$$,
                  'each run awaits a human, each approval holds the effects and the token''s hash, the outbox is empty');
SELECT is((SELECT reviews_requested FROM idemgate.effect_policies WHERE effect_type = 'ep_sampled'), 5::bigint,
          'reviews_requested counts them');
SELECT results_eq($$SELECT kind, actor, details->>'review', details->'review_sample', details->>'to', details ? 'token'
                      FROM idemgate.events WHERE idempotency_key = 'ep-s-1' AND kind <> 'recovered' ORDER BY id$$,
                  $$VALUES ('approval_requested', NULL::text, 'sampled', '1'::jsonb, 'awaiting_human', false)$$,
                  'one approval_requested event, marked sampled, with the state change');
SELECT is_empty($$SELECT 1 FROM idemgate.events e, reviews rv WHERE strpos(e.details::text, rv.review_requested->>'token') > 0$$,
                'the token is in no event');
-- The approver sees it like any request and decides it; approval enqueues
-- the effects (not held: a human approved them).
SELECT results_eq($$SELECT p.status, p.card->>'review', p.idempotency_key FROM reviews rv, idemgate.peek_approval(rv.review_requested->>'token') p
                     WHERE rv.k = 'ep-s-1'$$,
                  $$VALUES ('pending', 'sampled', 'ep-s-1')$$, 'peek_approval shows the sampled review');
SELECT results_eq($$SELECT c.outcome, cardinality(c.effect_ids) FROM reviews rv, idemgate.consume_approval(rv.review_requested->>'token', 'approve', 'maria') c
                     WHERE rv.k = 'ep-s-1'$$,
                  $$VALUES ('approved', 2)$$, 'approving the review enqueues both effects');
SELECT results_eq($$SELECT state FROM idemgate.runs WHERE idempotency_key = 'ep-s-1'
                    UNION ALL SELECT state FROM idemgate.outbox WHERE idempotency_key = 'ep-s-1'$$,
                  $$VALUES ('approved'), ('pending'), ('pending')$$, 'the run is approved, its effects pending');
-- A retried call on the reviewed run (by its owner, at the returned
-- version) is refused: it waits for a human.
UPDATE r SET version = 1 WHERE k = 'ep-s-2';
SELECT throws_ok($$SELECT * FROM pg_temp.enq('ep-s-2', pg_temp.fx('ep_sampled'))$$, 'IG002',
                 'illegal transition of run "ep-s-2" from awaiting_human to approved', 'a retry of a reviewed call: IG002');
-- The jsonb form carries review_requested too (the n8n form).
SELECT pg_temp.run('ep-s-json') \g /dev/null
SELECT results_eq($$SELECT effect_ids, version, review_requested ? 'token', review_requested ? 'approval_id'
                      FROM idemgate.enqueue_effect(jsonb_build_object('key', 'ep-s-json', 'owner', (SELECT owner FROM r WHERE k = 'ep-s-json'),
                                                                      'version', '0', 'effects', pg_temp.fx('ep_sampled')))$$,
                  $$VALUES ('{}'::uuid[], 1::bigint, true, true)$$, 'the jsonb form: review_requested with the token');
SELECT results_eq($$SELECT reviews_requested FROM idemgate.effect_policies WHERE effect_type = 'ep_sampled'$$,
                  $$VALUES (6::bigint)$$, 'six reviews counted so far');
SELECT matches(idemgate.prometheus(), E'\\nidemgate_reviews_requested_total\\{effect_type="ep_sampled"\\} 6\\n',
               'prometheus(): idemgate_reviews_requested_total{effect_type="ep_sampled"} 6');
-- A stranger gets a row of NULLs and requests nothing.
SELECT pg_temp.run('ep-s-stranger') \g /dev/null
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('ep-s-stranger', gen_random_uuid(), 0, pg_temp.fx('ep_sampled'))$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'a stranger: NULLs, no review');
SELECT is((SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'ep-s-stranger'), 0::bigint, 'and no approval');

-- review_sample 0.0: no call is a review (forty calls).
SELECT idemgate.set_effect_policy('ep_unsampled', review_sample => 0.0, actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-u-' || g) FROM generate_series(1, 40) g \g /dev/null
SELECT results_eq($$SELECT count(*), count(*) FILTER (WHERE e.review_requested IS NULL AND cardinality(e.effect_ids) = 1)
                      FROM r, pg_temp.enq(r.k, pg_temp.fx('ep_unsampled')) e WHERE r.k LIKE 'ep-u-%'$$,
                  $$VALUES (40::bigint, 40::bigint)$$, 'review_sample 0.0: forty calls, no review');
SELECT results_eq($$SELECT count(*) FILTER (WHERE state = 'approved'), (SELECT reviews_requested FROM idemgate.effect_policies WHERE effect_type = 'ep_unsampled')
                      FROM idemgate.runs WHERE idempotency_key LIKE 'ep-u-%'$$,
                  $$VALUES (40::bigint, 0::bigint)$$, 'all forty approved, none counted');

-- review_sample 0.5: about half of 200 calls (a fair draw: outside 60..140
-- happens with a probability below 1e-7).
SELECT idemgate.set_effect_policy('ep_half', review_sample => 0.5, actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-h-' || g) FROM generate_series(1, 200) g \g /dev/null
CREATE TEMP TABLE half AS
  SELECT e.review_requested IS NOT NULL AS reviewed FROM r, pg_temp.enq(r.k, pg_temp.fx('ep_half')) e WHERE r.k LIKE 'ep-h-%';
SELECT ok((SELECT count(*) FILTER (WHERE reviewed) BETWEEN 60 AND 140 FROM half), 'review_sample 0.5: about half are reviews');
SELECT results_eq($$SELECT (SELECT count(*) FILTER (WHERE reviewed) FROM half),
                           (SELECT reviews_requested FROM idemgate.effect_policies WHERE effect_type = 'ep_half'),
                           (SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'ep-h-%' AND state = 'awaiting_human'),
                           (SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'ep-h-%' AND state = 'approved')
                              + (SELECT count(*) FILTER (WHERE reviewed) FROM half)$$,
                  $$SELECT count(*) FILTER (WHERE reviewed), count(*) FILTER (WHERE reviewed), count(*) FILTER (WHERE reviewed), 200::bigint FROM half$$,
                  'each review counted once, its run awaiting a human; the others approved');

-- cancel_window: automatic effects of the type are not due before the
-- window ends (now() + 10 minutes here), or their own later not_before;
-- outbox.cancel_until records the end.
SELECT idemgate.set_effect_policy('ep_window', cancel_window => '10 minutes', actor => 'ops') \g /dev/null
SELECT pg_temp.run('ep-w-1') \g /dev/null
CREATE TEMP TABLE w AS
  SELECT * FROM pg_temp.enq('ep-w-1', jsonb_build_array(
    pg_temp.fx('ep_window', 'a'),
    pg_temp.fx('ep_window', 'b') || jsonb_build_object('not_before', now() + interval '1 hour'),
    pg_temp.fx('ep_window', 'c') || jsonb_build_object('not_before', now() + interval '1 minute'),
    pg_temp.fx('ep_free', 'd')));
SELECT results_eq($$SELECT target, state, next_attempt_at - now(), cancel_until - now() FROM idemgate.outbox
                     WHERE idempotency_key = 'ep-w-1' ORDER BY target$$,
                  $$VALUES ('a', 'pending', interval '10 minutes', interval '10 minutes'),
                           ('b', 'pending', interval '1 hour', interval '1 hour'),
                           ('c', 'pending', interval '10 minutes', interval '10 minutes'),
                           ('d', 'pending', interval '0', NULL::interval)$$,
                  'held until the window ends (or a later not_before); a free type is due now');
SELECT results_eq($$SELECT pending, due FROM idemgate.effect_types WHERE effect_type = 'ep_window'$$,
                  $$VALUES (3::bigint, 0::bigint)$$, 'none of them is due (claimable) inside the window');
-- An approver lists them (cancel_windows) and cancels one.
SELECT results_eq($$SELECT pg_temp.as_role('ep_approver', 'SELECT string_agg(target, '','' ORDER BY target) FROM idemgate.cancel_windows WHERE idempotency_key = ''ep-w-1''')$$,
                  $$VALUES ('a,b,c')$$, 'an approver sees the effects inside their window');
SELECT throws_ok($$SELECT pg_temp.as_role('ep_reader', 'SELECT count(*) FROM idemgate.cancel_windows')$$, '42501', NULL,
                 'a reader does not (they carry payloads)');
SELECT is(pg_temp.as_role('ep_approver', format('SELECT idemgate.cancel_in_window(%L, ''maria'', ''wrong customer'')',
                                                (SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'a'))),
          'cancelled', 'an approver cancels an effect inside its window');
SELECT results_eq($$SELECT e.actor, e.details - 'in_window_until', (e.details->>'in_window_until')::timestamptz = o.cancel_until
                      FROM idemgate.events e JOIN idemgate.outbox o ON o.effect_id = e.effect_id
                     WHERE e.idempotency_key = 'ep-w-1' AND e.kind = 'effect_cancelled'$$,
                  $$VALUES ('maria', '{"reason": "wrong customer", "effect_type": "ep_window", "previous_state": "pending"}'::jsonb, true)$$,
                  'audited as effect_cancelled by the approver, with the window''s end');
SELECT is(pg_temp.as_role('ep_approver', format('SELECT idemgate.cancel_in_window(%L)',
            jsonb_build_object('effect_id', (SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'b'),
                               'approver', 'maria'))),
          'cancelled', 'the jsonb form (reason optional)');
-- Refusals: no window (a free type, an effect a human approved), a window
-- that is over, an effect no longer pending, an unknown id, bad arguments;
-- a client may not call it at all.
SELECT throws_ok(format($$SELECT idemgate.cancel_in_window(%L, 'maria')$$, effect_id), 'IG002',
                 format('effect %s has no cancel window', effect_id), 'an effect without a window: IG002')
  FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'd';
SELECT pg_temp.run('ep-w-human') \g /dev/null
CREATE TEMP TABLE wh AS
  SELECT a.* FROM r, idemgate.request_approval(r.k, r.owner, r.version, pg_temp.fx('ep_window'), '1 hour') a WHERE r.k = 'ep-w-human';
SELECT is((SELECT c.outcome FROM wh, idemgate.consume_approval(wh.token, 'approve', 'maria') c), 'approved', 'a human approves an effect of the type');
SELECT results_eq($$SELECT next_attempt_at - now(), cancel_until FROM idemgate.outbox WHERE idempotency_key = 'ep-w-human'$$,
                  $$VALUES (interval '0', NULL::timestamptz)$$, 'a human-approved effect is due at once, without a window');
SELECT throws_ok(format($$SELECT idemgate.cancel_in_window(%L, 'maria')$$, effect_id), 'IG002',
                 format('effect %s has no cancel window', effect_id), 'an approver may not cancel what a human approved')
  FROM idemgate.outbox WHERE idempotency_key = 'ep-w-human';
UPDATE idemgate.outbox SET cancel_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second'
 WHERE idempotency_key = 'ep-w-1' AND target = 'c';
SELECT throws_ok(format($$SELECT idemgate.cancel_in_window(%L, 'maria')$$, effect_id), 'IG002',
                 format('the cancel window of effect %s is over; it is pending', effect_id), 'a window that is over: IG002')
  FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'c';
SELECT throws_ok(format($$SELECT idemgate.cancel_in_window(%L, 'maria')$$, effect_id), 'IG002',
                 format('the cancel window of effect %s is over; it is cancelled', effect_id), 'an effect already cancelled: IG002')
  FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'a';
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.cancel_in_window('00000000-0000-0000-0000-000000000000', 'maria')$$, 'IG003',
   'effect 00000000-0000-0000-0000-000000000000 does not exist'),
  ($$SELECT idemgate.cancel_in_window(NULL, 'maria')$$, '22004', 'argument "effect_id" must not be NULL'),
  ($$SELECT idemgate.cancel_in_window(gen_random_uuid(), NULL)$$, '22004', 'argument "approver" must not be NULL'),
  ($$SELECT idemgate.cancel_in_window(gen_random_uuid(), 'maria', '')$$, '22023', 'argument "reason" must be between 1 and 2000 bytes long, not 0'),
  ($$SELECT idemgate.cancel_in_window('{"approver": "maria"}'::jsonb)$$, '22004', 'field "effect_id" of argument "request" must not be missing or null')
) AS t(q, code, m);
SELECT throws_ok(format('SELECT pg_temp.as_role(''ep_client'', %L)', format('SELECT idemgate.cancel_in_window(%L, ''bot'')', effect_id)), '42501', NULL,
                 'a client may not cancel')
  FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' AND target = 'c';
SELECT results_eq($$SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'ep-w-1' ORDER BY target$$,
                  $$VALUES ('a', 'cancelled'), ('b', 'cancelled'), ('c', 'pending'), ('d', 'pending')$$,
                  'only the two cancelled in their window are cancelled');
-- A run whose effects are all cancelled in their window completes.
SELECT pg_temp.run('ep-w-2') \g /dev/null
CREATE TEMP TABLE w2 AS SELECT * FROM pg_temp.enq('ep-w-2', pg_temp.fx('ep_window'));
SELECT is(idemgate.cancel_in_window((SELECT effect_ids[1] FROM w2), 'joan', 'not today'), 'cancelled', 'the only effect of ep-w-2 is cancelled');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'ep-w-2'), 'completed', 'its run completes');

-- A reserved type is never enqueued or requested by a caller.
SELECT pg_temp.run('ep-reserved') \g /dev/null
SELECT throws_ok($$SELECT * FROM pg_temp.enq('ep-reserved', pg_temp.fx('idemgate.rerun:ep-workflow'))$$, '22023',
                 'effects.type "idemgate.rerun:ep-workflow" is reserved', 'enqueue_effect refuses a reserved type');
SELECT throws_ok(format($$SELECT * FROM idemgate.request_approval('ep-reserved', %L, 0, %L)$$,
                        (SELECT owner FROM r WHERE k = 'ep-reserved'), jsonb_build_array(pg_temp.fx('ep_free'), pg_temp.fx('idemgate.x'))),
                 '22023', 'effects[1].type "idemgate.x" is reserved', 'so does request_approval');

SELECT * FROM finish();
ROLLBACK;
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
