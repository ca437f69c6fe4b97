-- Outbox pull API: claim_effects, complete_effect, fail_effect.
-- Effects are enqueued the real way (claim + enqueue_effect). Effect types
-- are unique to this file and have no registered endpoint unless a block
-- registers one inside a transaction that is rolled back (so a running
-- dispatcher never sees them). pgTAP.
\i test/sql/include/pgtap.psql

-- mk(key, type, n) claims key and enqueues n effects of type (run approved).
CREATE FUNCTION pg_temp.mk(k text, t text, n int) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE c record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  SELECT * INTO e FROM idemgate.enqueue_effect(k, c.lease_owner, c.version,
    (SELECT jsonb_agg(jsonb_build_object('type', t, 'target', 'target-' || g,
                                         'payload', jsonb_build_object('n', g, 'body', 'hello ' || k)))
     FROM generate_series(1, n) g));
  RETURN QUERY SELECT unnest(e.effect_ids);
END $$;
-- mk_in(key, type, n, run_state): effects under a run that is not approved.
-- Not reachable through the API except approved → failed_terminal; inserted
-- directly to show that claim_effects filters on the run's state anyway.
CREATE FUNCTION pg_temp.mk_in(k text, t text, n int, rs text) RETURNS SETOF uuid LANGUAGE sql AS $$
  INSERT INTO idemgate.runs (idempotency_key, state, payload_hash, payload)
  VALUES (k, rs, idemgate.hash_payload(jsonb_build_object('k', k)), jsonb_build_object('k', k));
  INSERT INTO idemgate.outbox (effect_id, idempotency_key, effect_type, target, payload)
  SELECT gen_random_uuid(), k, t, 'target-' || g, jsonb_build_object('n', g)
  FROM generate_series(1, n) g RETURNING effect_id;
$$;

SELECT * FROM no_plan();

-- Bad input: NULL → 22004, out of range → 22023, each naming the argument.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim_effects(NULL)$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_effects('')$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', NULL)$$, '22004', 'argument "batch" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 0)$$, '22023', 'argument "batch" must be between 1 and 1000, not 0'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 1001)$$, '22023', 'argument "batch" must be between 1 and 1000, not 1001'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, NULL)$$, '22004', 'argument "lease" must not be NULL'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '0 s')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '-1 s')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '1 hour 1 second')$$, '22023', 'argument "lease" must be greater than 0 s and at most 3600 s'),
  ($$SELECT idemgate.complete_effect(NULL, gen_random_uuid())$$, '22004', 'argument "effect_id" must not be NULL'),
  ($$SELECT idemgate.complete_effect(gen_random_uuid(), NULL)$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid(), '')$$, '22023',
   'argument "provider_id" must be between 1 and 1000 bytes long, not 0'),
  ($$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid(), 'p', 99)$$, '22023',
   'argument "status" must be an HTTP status between 100 and 599, not 99'),
  ($$SELECT idemgate.fail_effect(NULL, gen_random_uuid(), 'transport')$$, '22004', 'argument "effect_id" must not be NULL'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), NULL, 'transport')$$, '22004', 'argument "owner" must not be NULL'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), NULL)$$, '22004', 'argument "error_class" must not be NULL'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'timeout')$$, '22023',
   'argument "error_class" must be a known error class, not "timeout"'),
  -- lease_expired is only ever written by the settle step, never by a caller.
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'lease_expired')$$, '22023',
   'argument "error_class" must be a known error class, not "lease_expired"'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport', NULL, '-1 s')$$, '22023',
   'argument "retry_after" must not be negative'),
  ($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport', NULL, NULL, 600)$$, '22023',
   'argument "status" must be an HTTP status between 100 and 599, not 600')
) AS t(q, code, m);
SELECT lives_ok($$SELECT * FROM idemgate.claim_effects('outbox_x', 1000)$$, 'batch 1000 is allowed');
SELECT lives_ok($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '1 hour')$$, 'a lease of 1 hour is allowed');
-- Unknown effect or owner: the lease is "lost" → false / NULL, not an error.
SELECT is(idemgate.complete_effect(gen_random_uuid(), gen_random_uuid()), false, 'complete_effect of an unknown effect: false');
SELECT is(idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport'), NULL, 'fail_effect of an unknown effect: NULL');

-- Only due pending effects of approved runs are claimed.
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-claim-a', 'outbox_claim', 3)), 3::bigint, 'approved run: 3 effects');
SELECT is((SELECT count(*) FROM pg_temp.mk_in('outbox-claim-p', 'outbox_claim', 2, 'processing')), 2::bigint, 'processing run: 2 effects');
SELECT is((SELECT count(*) FROM pg_temp.mk_in('outbox-claim-h', 'outbox_claim', 1, 'awaiting_human')), 1::bigint, 'awaiting_human run: 1 effect');
-- approved, then failed terminally by its owner: its effect is never sent
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-claim-f', 'outbox_claim', 1)), 1::bigint, 'a run to fail: 1 effect');
SELECT is((SELECT idemgate.fail(idempotency_key, lease_owner, version, 'aborted', 'operator abort', false)
             FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-f'), 'failed_terminal', 'its run fails for good');
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-claim-later', 'outbox_claim', 1)), 1::bigint, 'an effect due later');
UPDATE idemgate.outbox SET next_attempt_at = now() + interval '1 hour'
 WHERE idempotency_key = 'outbox-claim-later';
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-claim-other', 'outbox_claim_other', 1)), 1::bigint, 'an effect of another type');
BEGIN;
CREATE TEMP TABLE c1 AS SELECT * FROM idemgate.claim_effects('outbox_claim', 2, '30 seconds');
CREATE TEMP TABLE c2 AS SELECT * FROM idemgate.claim_effects('outbox_claim', 10, '30 seconds');
-- two calls: 2 + 1 effects, all of the approved run, one owner per call, attempt 1
SELECT results_eq('SELECT (SELECT count(*) FROM c1), (SELECT count(*) FROM c2)', $$VALUES (2::bigint, 1::bigint)$$,
                  'two calls: 2 + 1 effects');
SELECT results_eq('SELECT DISTINCT idempotency_key, effect_type, attempt FROM (TABLE c1 UNION ALL TABLE c2) c',
                  $$VALUES ('outbox-claim-a', 'outbox_claim', 1)$$, 'all of the approved run, attempt 1');
SELECT results_eq($$SELECT (SELECT count(DISTINCT lease_owner) FROM c1), (SELECT count(DISTINCT lease_owner) FROM c2),
                           (SELECT lease_owner FROM c1 LIMIT 1) <> (SELECT lease_owner FROM c2 LIMIT 1)$$,
                  $$VALUES (1::bigint, 1::bigint, true)$$, 'one owner per call, a fresh one each time');
-- the rows agree with what was returned: sending, lease = now() + 30 s
SELECT results_eq($$SELECT o.state, o.attempts, o.lease_expires_at = now() + interval '30 seconds',
                           o.payload = c.payload AND o.target = c.target, count(*)
                      FROM idemgate.outbox o JOIN (TABLE c1 UNION ALL TABLE c2) c USING (effect_id, lease_owner)
                     GROUP BY 1, 2, 3, 4$$,
                  $$VALUES ('sending', 1, true, true, 3::bigint)$$, 'the rows agree: sending, leased for 30 s');
COMMIT;
SELECT results_eq($$SELECT idempotency_key, state, count(*) FROM idemgate.outbox
                     WHERE effect_type = 'outbox_claim' GROUP BY 1, 2 ORDER BY 1, 2$$,
                  $$VALUES ('outbox-claim-a', 'sending', 3::bigint), ('outbox-claim-f', 'pending', 1::bigint),
                           ('outbox-claim-h', 'pending', 1::bigint), ('outbox-claim-later', 'pending', 1::bigint),
                           ('outbox-claim-p', 'pending', 2::bigint)$$,
                  'only the approved run''s due effects were claimed');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('outbox_claim')), 0::bigint, 'nothing left to claim');

-- complete_effect: a CAS on (effect_id, owner, sending). The run completes
-- only with its last effect.
SELECT is((SELECT idemgate.complete_effect(c.effect_id, gen_random_uuid()) FROM c1 c LIMIT 1), false, 'a wrong owner: false');
SELECT results_eq($$SELECT idemgate.complete_effect(c.effect_id, c.lease_owner, 'prov-' || c.target, 201) FROM c1 c ORDER BY c.target$$,
                  $$VALUES (true), (true)$$, 'the owner completes two');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-a'), 'approved', 'the run waits for its last effect');
SELECT results_eq($$SELECT idemgate.complete_effect(c.effect_id, c.lease_owner, 'again') FROM c1 c ORDER BY c.target$$,
                  $$VALUES (false), (false)$$, 'completing twice: false');
SELECT results_eq($$SELECT idemgate.complete_effect(c.effect_id, c.lease_owner) FROM c2 c$$, $$VALUES (true)$$, 'the last one');
SELECT results_eq($$SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-a'$$,
                  $$VALUES ('completed', 2::bigint)$$, 'the run completes with its last effect');
SELECT results_eq($$SELECT target, state, provider_id, last_status FROM idemgate.outbox
                     WHERE idempotency_key = 'outbox-claim-a' ORDER BY target$$,
                  $$VALUES ('target-1', 'completed', 'prov-target-1', 201), ('target-2', 'completed', 'prov-target-2', 201),
                           ('target-3', 'completed', NULL, NULL)$$, 'provider ids and statuses kept');
-- the deliveries and the run's completion are recorded by the rows
-- themselves: key_history shows them beside the events
SELECT bag_eq($$SELECT kind, details - 'version' FROM idemgate.key_history
                     WHERE idempotency_key = 'outbox-claim-a' AND kind IN ('effect_completed', 'state_changed')$$,
                  $$VALUES ('effect_completed', '{"status": 201, "attempt": 1, "provider_id": "prov-target-1"}'::jsonb),
                           ('effect_completed', '{"status": 201, "attempt": 1, "provider_id": "prov-target-2"}'),
                           ('effect_completed', '{"attempt": 1}'),
                           ('state_changed', '{"to": "completed", "from": "approved"}')$$,
                  'audited: each completion, then the run');
SELECT is((SELECT count(*) FROM idemgate.events
            WHERE idempotency_key = 'outbox-claim-a' AND kind IN ('effect_completed', 'state_changed')),
          0::bigint, 'no event rows: the completions are in the rows');
SELECT results_eq($$SELECT k.effect_id, k.at FROM idemgate.key_history k
                     WHERE k.idempotency_key = 'outbox-claim-a' AND k.kind = 'effect_completed' ORDER BY k.effect_id$$,
                  $$SELECT o.effect_id, o.updated_at FROM idemgate.outbox o
                     WHERE o.idempotency_key = 'outbox-claim-a' ORDER BY o.effect_id$$,
                  'each delivery entry names its effect and when it completed');

-- fail_effect: the outcome of each error class, without an endpoint
-- (default: unknown for classes where the send may have happened) and with
-- an endpoint that honours the Idempotency-Key (retry instead).
CREATE FUNCTION pg_temp.outcome(cls text, honors boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t text := 'outbox_sm_' || cls || '_' || honors;
  e record;
  st text;
BEGIN
  IF honors THEN
    PERFORM idemgate.register_endpoint(t, 'https://example.com/hook', '5 s', 3, true);
  END IF;
  PERFORM pg_temp.mk('outbox-sm-' || cls || '-' || honors, t, 1);
  SELECT * INTO e FROM idemgate.claim_effects(t, 1);
  st := idemgate.fail_effect(e.effect_id, e.lease_owner, cls, 'boom', NULL, 503);
  RETURN st || ' / ' || (SELECT state FROM idemgate.outbox WHERE effect_id = e.effect_id)
       || ' / dead letters ' || (SELECT count(*) FROM idemgate.dead_letters WHERE effect_id = e.effect_id);
END $$;
BEGIN;
SELECT results_eq($$SELECT cls, honors, pg_temp.outcome(cls, honors)
                      FROM unnest(ARRAY['transport', 'rate_limited', 'unavailable', 'timeout_after_send',
                                        'server_error', 'rejected']) WITH ORDINALITY AS u(cls, i),
                           (VALUES (false), (true)) AS h(honors)
                     ORDER BY i, honors$$,
                  $$VALUES ('transport', false, 'pending / pending / dead letters 0'),
                           ('transport', true, 'pending / pending / dead letters 0'),
                           ('rate_limited', false, 'pending / pending / dead letters 0'),
                           ('rate_limited', true, 'pending / pending / dead letters 0'),
                           ('unavailable', false, 'pending / pending / dead letters 0'),
                           ('unavailable', true, 'pending / pending / dead letters 0'),
                           ('timeout_after_send', false, 'unknown / unknown / dead letters 0'),
                           ('timeout_after_send', true, 'pending / pending / dead letters 0'),
                           ('server_error', false, 'unknown / unknown / dead letters 0'),
                           ('server_error', true, 'pending / pending / dead letters 0'),
                           ('rejected', false, 'failed / failed / dead letters 1'),
                           ('rejected', true, 'failed / failed / dead letters 1')$$,
                  'each error class: its outcome with and without an endpoint that honours the key');
ROLLBACK;

-- last_status, last_error and the effect_failed event
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-ev', 'outbox_ev', 1)), 1::bigint, 'one effect');
SELECT results_eq($$SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', 'HTTP 429 Too Many Requests', NULL, 429)
                      FROM idemgate.claim_effects('outbox_ev')$$, $$VALUES ('pending')$$, 'rate_limited: pending');
SELECT results_eq($$SELECT state, attempts, last_status, last_error, lease_expires_at IS NULL
                      FROM idemgate.outbox WHERE idempotency_key = 'outbox-ev'$$,
                  $$VALUES ('pending', 1, 429, 'HTTP 429 Too Many Requests', true)$$, 'status and error kept, lease cleared');
SELECT results_eq($$SELECT kind, details - 'retry_at', (details->>'retry_at')::timestamptz = o.next_attempt_at
                      FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
                     WHERE e.idempotency_key = 'outbox-ev' ORDER BY e.id$$,
                  $$VALUES ('effect_failed', '{"status": 429, "attempt": 1, "new_state": "pending", "error_class": "rate_limited"}'::jsonb, true)$$,
                  'the effect_failed event, with retry_at = next_attempt_at');
-- an error longer than 8192 bytes is kept cut to 8192 (on a character boundary) + " [truncated]"
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-long', 'outbox_long', 1)), 1::bigint, 'one effect');
SELECT results_eq($$SELECT idemgate.fail_effect(effect_id, lease_owner, 'timeout_after_send', repeat('é', 5000))
                      FROM idemgate.claim_effects('outbox_long')$$, $$VALUES ('unknown')$$, 'a 10000-byte error: unknown');
SELECT results_eq($$SELECT state, octet_length(last_error) FROM idemgate.outbox WHERE idempotency_key = 'outbox-long'$$,
                  $$VALUES ('unknown', 8204)$$, 'kept cut to 8192 bytes + marker');
-- a settled effect cannot be failed or completed again
SELECT results_eq($$SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport') IS NULL,
                           idemgate.complete_effect(effect_id, lease_owner)
                      FROM idemgate.outbox WHERE idempotency_key = 'outbox-long'$$,
                  $$VALUES (true, false)$$, 'a settled effect: fail_effect NULL, complete_effect false');

-- Backoff: attempt n waits 1 s × 4^(n−1) × [1, 1.5). now() is fixed inside
-- the transaction, so next_attempt_at − now() is exactly the delay. The
-- endpoint allows 5 attempts; between attempts the effect is made due again.
BEGIN;
SELECT idemgate.register_endpoint('outbox_bo', 'https://example.com/bo', '5 s', 5, false) \g /dev/null
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-bo', 'outbox_bo', 1)), 1::bigint, 'one effect, 5 attempts allowed');
CREATE TEMP TABLE bo (attempt int, new_state text, delay interval);
CREATE FUNCTION pg_temp.bo_round() RETURNS void LANGUAGE plpgsql AS $$
DECLARE e record; st text;
BEGIN
  UPDATE idemgate.outbox SET next_attempt_at = now() WHERE idempotency_key = 'outbox-bo';
  SELECT * INTO e FROM idemgate.claim_effects('outbox_bo', 1);
  st := idemgate.fail_effect(e.effect_id, e.lease_owner, 'unavailable', '503', NULL, 503);
  INSERT INTO bo SELECT e.attempt, st, next_attempt_at - now()
  FROM idemgate.outbox WHERE effect_id = e.effect_id;
END $$;
SELECT pg_temp.bo_round() FROM generate_series(1, 5) \g /dev/null
SELECT results_eq($$SELECT attempt, new_state,
                           CASE WHEN new_state = 'pending' THEN
                             delay >= interval '1 s' * 4 ^ (attempt - 1) AND delay < interval '1.5 s' * 4 ^ (attempt - 1)
                           END
                      FROM bo ORDER BY attempt$$,
                  $$VALUES (1, 'pending', true), (2, 'pending', true), (3, 'pending', true), (4, 'pending', true),
                           (5, 'failed', NULL::boolean)$$,
                  'backoff 1 s × 4^(n−1) × [1, 1.5), failed at attempt 5');
ROLLBACK;

-- Jitter: ten first attempts do not all wait the same time.
BEGIN;
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-jit', 'outbox_jit', 10)), 10::bigint, 'ten effects');
SELECT is((SELECT count(*) FILTER (WHERE st = 'pending') FROM (
             SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport') AS st
             FROM idemgate.claim_effects('outbox_jit', 10)) f), 10::bigint, 'all ten pending again');
SELECT results_eq($$SELECT count(DISTINCT next_attempt_at) > 1,
                           bool_and(next_attempt_at - now() >= interval '1 s' AND next_attempt_at - now() < interval '1.5 s')
                      FROM idemgate.outbox WHERE idempotency_key = 'outbox-jit'$$,
                  $$VALUES (true, true)$$, 'jittered, within [1 s, 1.5 s)');
ROLLBACK;

-- Retry-After: wins when longer than the backoff, ignored when shorter,
-- and honoured beyond idemgate.max_backoff (default 1 hour), which caps
-- only the backoff (test retry_after: up to 24 hours, never early).
BEGIN;
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-ra', 'outbox_ra', 3)), 3::bigint, 'three effects');
CREATE TEMP TABLE ra AS
SELECT c.target, idemgate.fail_effect(c.effect_id, c.lease_owner, 'rate_limited', '429',
         CASE c.target WHEN 'target-1' THEN interval '30 seconds'
                       WHEN 'target-2' THEN interval '0.5 seconds'
                       ELSE interval '2 hours' END, 429) AS st
FROM idemgate.claim_effects('outbox_ra', 3) c;
SELECT results_eq($$SELECT r.target, r.st,
                           CASE WHEN r.target <> 'target-2' THEN o.next_attempt_at - now() END,
                           o.next_attempt_at - now() >= interval '1 s' AND o.next_attempt_at - now() < interval '1.5 s'
                      FROM ra r JOIN idemgate.outbox o ON o.idempotency_key = 'outbox-ra' AND o.target = r.target
                     ORDER BY r.target$$,
                  $$VALUES ('target-1', 'pending', interval '30 seconds', false), ('target-2', 'pending', NULL, true),
                           ('target-3', 'pending', interval '2 hours', false)$$,
                  'Retry-After: 30 s wins, 0.5 s is ignored, 2 hours is honoured past max_backoff');
ROLLBACK;
-- The exponential part is capped too: attempt 20 of an endpoint allowing 100.
BEGIN;
SELECT idemgate.register_endpoint('outbox_cap', 'https://example.com/cap', '5 s', 100, false) \g /dev/null
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-cap', 'outbox_cap', 1)), 1::bigint, 'one effect, 100 attempts allowed');
UPDATE idemgate.outbox SET attempts = 19 WHERE idempotency_key = 'outbox-cap';
SELECT results_eq($$SELECT attempt, idemgate.fail_effect(effect_id, lease_owner, 'transport') FROM idemgate.claim_effects('outbox_cap')$$,
                  $$VALUES (20, 'pending')$$, 'attempt 20: pending');
SELECT is((SELECT next_attempt_at - now() FROM idemgate.outbox WHERE idempotency_key = 'outbox-cap'), interval '1 hour',
          'the backoff is capped at max_backoff');
ROLLBACK;

-- Exhaustion without an endpoint: 3 attempts, then failed + dead letter
-- with the full effect (type, target, payload), the error and the attempts.
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-ex', 'outbox_ex', 1)), 1::bigint, 'one effect');
CREATE FUNCTION pg_temp.ex_round() RETURNS text LANGUAGE plpgsql AS $$
DECLARE e record;
BEGIN
  UPDATE idemgate.outbox SET next_attempt_at = now() WHERE idempotency_key = 'outbox-ex';
  SELECT * INTO e FROM idemgate.claim_effects('outbox_ex', 1);
  RETURN e.attempt || ': ' || idemgate.fail_effect(e.effect_id, e.lease_owner, 'transport', 'connection refused');
END $$;
SELECT results_eq('SELECT pg_temp.ex_round() FROM generate_series(1, 3)',
                  $$VALUES ('1: pending'), ('2: pending'), ('3: failed')$$, 'three attempts, then failed');
SELECT results_eq($$SELECT d.kind, d.idempotency_key, d.effect_id = o.effect_id, d.effect_type, d.target,
                           d.payload, d.error_class, d.error, d.attempts, d.reinjected_at
                      FROM idemgate.dead_letters d JOIN idemgate.outbox o USING (effect_id)
                     WHERE o.idempotency_key = 'outbox-ex'$$,
                  $$VALUES ('effect', 'outbox-ex', true, 'outbox_ex', 'target-1', '{"n": 1, "body": "hello outbox-ex"}'::jsonb,
                            'transport', 'connection refused', 3, NULL::timestamptz)$$,
                  'a dead letter with the full effect');
SELECT results_eq($$SELECT o.state, r.state FROM idemgate.outbox o JOIN idemgate.runs r USING (idempotency_key)
                     WHERE idempotency_key = 'outbox-ex'$$,
                  $$VALUES ('failed', 'failed_terminal')$$, 'the effect failed, its run ended failed_terminal');
SELECT results_eq($$SELECT kind, details->>'new_state', details->>'attempt', details->>'error_class'
                      FROM idemgate.events WHERE idempotency_key = 'outbox-ex' AND kind IN ('effect_failed', 'dead_lettered') ORDER BY id$$,
                  $$VALUES ('effect_failed', 'pending', '1', 'transport'), ('effect_failed', 'pending', '2', 'transport'),
                           ('effect_failed', 'failed', '3', 'transport'), ('dead_lettered', NULL, NULL, 'transport')$$,
                  'audited: each attempt and the dead letter');

-- Expired leases. An expired lease that is not settled yet may still be
-- completed by its owner (the send happened). claim_effects settles the
-- others first: unknown without an endpoint; afterwards the stale owner's
-- complete_effect and fail_effect find nothing. The lease is expired inside
-- a transaction that also settles it, so a running dispatcher (whose
-- SettleExpiredLeases settles every type) never sees the expired lease.
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-lease', 'outbox_lease', 2)), 2::bigint, 'two effects');
CREATE TEMP TABLE lc AS SELECT * FROM idemgate.claim_effects('outbox_lease', 2);
BEGIN;
UPDATE idemgate.outbox SET lease_expires_at = now() - interval '1 second'
WHERE idempotency_key = 'outbox-lease';
SELECT is((SELECT idemgate.complete_effect(effect_id, lease_owner, 'late-but-real') FROM lc WHERE target = 'target-1'), true,
          'an expired, unsettled lease can still be completed');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('outbox_lease')), 0::bigint, 'claim_effects settles the other, claims nothing');
SELECT results_eq($$SELECT target, state, attempts, last_error FROM idemgate.outbox WHERE idempotency_key = 'outbox-lease' ORDER BY target$$,
                  $$VALUES ('target-1', 'completed', 1, NULL::text),
                           ('target-2', 'unknown', 1, 'lease expired before the outcome was recorded')$$,
                  'settled: unknown without an endpoint');
SELECT results_eq($$SELECT idemgate.complete_effect(effect_id, lease_owner), idemgate.fail_effect(effect_id, lease_owner, 'transport')
                      FROM lc WHERE target = 'target-2'$$,
                  $$VALUES (false, NULL::text)$$, 'the stale owner finds nothing');
SELECT results_eq($$SELECT kind, details FROM idemgate.events
                     WHERE idempotency_key = 'outbox-lease' AND kind = 'effect_failed'$$,
                  $$VALUES ('effect_failed', '{"attempt": 1, "new_state": "unknown", "error_class": "lease_expired"}'::jsonb)$$,
                  'the settlement is audited as lease_expired');
COMMIT;
-- claim_effects only settles its own effect type. The expiry, that check
-- and the next block run in ONE transaction that is rolled back: a running
-- dispatcher never sees the expired lease (it would settle it in between),
-- nor the endpoint.
SELECT is((SELECT count(*) FROM pg_temp.mk('outbox-lease2', 'outbox_lease2', 1)), 1::bigint, 'one effect of another type');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('outbox_lease2')), 1::bigint, 'claimed');
BEGIN;
UPDATE idemgate.outbox SET lease_expires_at = now() - interval '1 second'
WHERE idempotency_key = 'outbox-lease2';
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'outbox-lease2'
           AND state = 'sending' AND lease_expires_at < now()), 1::bigint, 'its lease has expired');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('outbox_claim')), 0::bigint, 'claim_effects of another type');
SELECT is((SELECT state FROM idemgate.outbox WHERE idempotency_key = 'outbox-lease2'), 'sending', 'leaves it sending');
-- With an endpoint that honours the key, an expired lease goes back to
-- pending with backoff.
SELECT idemgate.register_endpoint('outbox_lease2', 'https://example.com/l2', '5 s', 3, true) \g /dev/null
SELECT is((SELECT count(*) FROM idemgate.claim_effects('outbox_lease2')), 0::bigint, 'its own claim_effects settles it');
SELECT results_eq($$SELECT state, next_attempt_at - now() >= interval '1 s' FROM idemgate.outbox
                     WHERE idempotency_key = 'outbox-lease2'$$,
                  $$VALUES ('pending', true)$$, 'with an endpoint that honours the key: pending with backoff');
ROLLBACK;

-- Clean up this file's rows (other files share the database).
DELETE FROM idemgate.dead_letters WHERE idempotency_key LIKE 'outbox-%';
DELETE FROM idemgate.outbox WHERE idempotency_key LIKE 'outbox-%';
DELETE FROM idemgate.approvals WHERE idempotency_key LIKE 'outbox-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'outbox-%';
SELECT is((SELECT count(*) FROM idemgate.outbox WHERE idempotency_key LIKE 'outbox-%'), 0::bigint, 'nothing left over');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
