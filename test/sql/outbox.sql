-- Outbox pull API: claim_effects, complete_effect, fail_effect.
-- Effects are enqueued the real way (claim + enqueue_effect). Effect types
-- are unique to this file and have no registered endpoint unless a block
-- registers one inside a transaction that is rolled back (so a running
-- dispatcher never sees them).
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

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

-- Bad input: NULL → 22004, out of range → 22023, each naming the argument.
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects(NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 0)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 1001)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 1000)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '0 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '-1 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '1 hour 1 second')$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('outbox_x', 5, '1 hour')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.complete_effect(NULL, gen_random_uuid())$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.complete_effect(gen_random_uuid(), NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid(), '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid(), 'p', 99)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(NULL, gen_random_uuid(), 'transport')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), NULL, 'transport')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'timeout')$$);
-- lease_expired is only ever written by the settle step, never by a caller.
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'lease_expired')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport', NULL, '-1 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport', NULL, NULL, 600)$$);
-- Unknown effect or owner: the lease is "lost" → false / NULL, not an error.
SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid()) AS unknown_complete,
       idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport') IS NULL AS unknown_fail;

-- Only due pending effects of approved runs are claimed.
SELECT count(*) FROM pg_temp.mk('outbox-claim-a', 'outbox_claim', 3);
SELECT count(*) FROM pg_temp.mk_in('outbox-claim-p', 'outbox_claim', 2, 'processing');
SELECT count(*) FROM pg_temp.mk_in('outbox-claim-h', 'outbox_claim', 1, 'awaiting_human');
-- approved, then failed terminally by its owner: its effect is never sent
SELECT count(*) FROM pg_temp.mk('outbox-claim-f', 'outbox_claim', 1);
SELECT idemgate.fail(idempotency_key, lease_owner, version, 'aborted', 'operator abort', false)
FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-f';
SELECT count(*) FROM pg_temp.mk('outbox-claim-later', 'outbox_claim', 1);
UPDATE idemgate.outbox SET next_attempt_at = now() + interval '1 hour'
 WHERE idempotency_key = 'outbox-claim-later';
SELECT count(*) FROM pg_temp.mk('outbox-claim-other', 'outbox_claim_other', 1);
BEGIN;
CREATE TEMP TABLE c1 AS SELECT * FROM idemgate.claim_effects('outbox_claim', 2, '30 seconds');
CREATE TEMP TABLE c2 AS SELECT * FROM idemgate.claim_effects('outbox_claim', 10, '30 seconds');
-- two calls: 2 + 1 effects, all of the approved run, one owner per call, attempt 1
SELECT (SELECT count(*) FROM c1) AS first, (SELECT count(*) FROM c2) AS second;
SELECT DISTINCT idempotency_key, effect_type, attempt FROM (TABLE c1 UNION ALL TABLE c2) c;
SELECT (SELECT count(DISTINCT lease_owner) FROM c1) AS owners1,
       (SELECT count(DISTINCT lease_owner) FROM c2) AS owners2,
       (SELECT lease_owner FROM c1 LIMIT 1) <> (SELECT lease_owner FROM c2 LIMIT 1) AS fresh_owner;
-- the rows agree with what was returned: sending, lease = now() + 30 s
SELECT o.state, o.attempts, o.lease_expires_at = now() + interval '30 seconds' AS lease_ok,
       o.payload = c.payload AND o.target = c.target AS row_ok, count(*)
FROM idemgate.outbox o JOIN (TABLE c1 UNION ALL TABLE c2) c USING (effect_id, lease_owner)
GROUP BY 1, 2, 3, 4;
COMMIT;
SELECT idempotency_key, state, count(*) FROM idemgate.outbox
WHERE effect_type = 'outbox_claim' GROUP BY 1, 2 ORDER BY 1, 2;
-- nothing left to claim
SELECT count(*) FROM idemgate.claim_effects('outbox_claim');

-- complete_effect: a CAS on (effect_id, owner, sending). The run completes
-- only with its last effect.
SELECT idemgate.complete_effect(c.effect_id, gen_random_uuid()) AS wrong_owner FROM c1 c LIMIT 1;
SELECT idemgate.complete_effect(c.effect_id, c.lease_owner, 'prov-' || c.target, 201) AS completed
FROM c1 c ORDER BY c.target;
SELECT state FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-a';
SELECT idemgate.complete_effect(c.effect_id, c.lease_owner, 'again') AS twice FROM c1 c ORDER BY c.target;
SELECT idemgate.complete_effect(c.effect_id, c.lease_owner) AS last_one FROM c2 c;
SELECT state, version FROM idemgate.runs WHERE idempotency_key = 'outbox-claim-a';
SELECT target, state, provider_id, last_status FROM idemgate.outbox
WHERE idempotency_key = 'outbox-claim-a' ORDER BY target;
SELECT kind, details - 'version' AS details FROM idemgate.events
WHERE idempotency_key = 'outbox-claim-a' AND kind IN ('effect_completed', 'state_changed') ORDER BY id;

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
SELECT cls, honors, pg_temp.outcome(cls, honors)
FROM unnest(ARRAY['transport', 'rate_limited', 'unavailable', 'timeout_after_send',
                  'server_error', 'rejected']) WITH ORDINALITY AS u(cls, i),
     (VALUES (false), (true)) AS h(honors)
ORDER BY i, honors;
ROLLBACK;

-- last_status, last_error and the effect_failed event
SELECT count(*) FROM pg_temp.mk('outbox-ev', 'outbox_ev', 1);
SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', 'HTTP 429 Too Many Requests', NULL, 429)
FROM idemgate.claim_effects('outbox_ev');
SELECT state, attempts, last_status, last_error, lease_expires_at IS NULL AS lease_cleared
FROM idemgate.outbox WHERE idempotency_key = 'outbox-ev';
SELECT kind, details - 'retry_at' AS details,
       (details->>'retry_at')::timestamptz = o.next_attempt_at AS retry_at_ok
FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
WHERE e.idempotency_key = 'outbox-ev' ORDER BY e.id;
-- an error longer than 8192 bytes is kept cut to 8192 (on a character boundary) + " [truncated]"
SELECT count(*) FROM pg_temp.mk('outbox-long', 'outbox_long', 1);
SELECT idemgate.fail_effect(effect_id, lease_owner, 'timeout_after_send', repeat('é', 5000))
FROM idemgate.claim_effects('outbox_long');
SELECT state, octet_length(last_error) FROM idemgate.outbox WHERE idempotency_key = 'outbox-long';
-- a settled effect cannot be failed or completed again
SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport') IS NULL AS lost,
       idemgate.complete_effect(effect_id, lease_owner) AS completed
FROM idemgate.outbox WHERE idempotency_key = 'outbox-long';

-- Backoff: attempt n waits 1 s × 4^(n−1) × [1, 1.5). now() is fixed inside
-- the transaction, so next_attempt_at − now() is exactly the delay. The
-- endpoint allows 5 attempts; between attempts the effect is made due again.
BEGIN;
SELECT idemgate.register_endpoint('outbox_bo', 'https://example.com/bo', '5 s', 5, false);
SELECT count(*) FROM pg_temp.mk('outbox-bo', 'outbox_bo', 1);
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
SELECT pg_temp.bo_round() FROM generate_series(1, 5);
SELECT attempt, new_state,
       CASE WHEN new_state = 'pending' THEN
         delay >= interval '1 s' * 4 ^ (attempt - 1) AND delay < interval '1.5 s' * 4 ^ (attempt - 1)
       END AS within_bounds
FROM bo ORDER BY attempt;
ROLLBACK;

-- Jitter: ten first attempts do not all wait the same time.
BEGIN;
SELECT count(*) FROM pg_temp.mk('outbox-jit', 'outbox_jit', 10);
SELECT count(*) FILTER (WHERE st = 'pending') AS pending FROM (
  SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport') AS st
  FROM idemgate.claim_effects('outbox_jit', 10)) f;
SELECT count(DISTINCT next_attempt_at) > 1 AS jittered,
       bool_and(next_attempt_at - now() >= interval '1 s' AND next_attempt_at - now() < interval '1.5 s') AS bounded
FROM idemgate.outbox WHERE idempotency_key = 'outbox-jit';
ROLLBACK;

-- Retry-After: wins when longer than the backoff, ignored when shorter,
-- and capped by idemgate.max_backoff (default 1 hour) like the backoff.
BEGIN;
SELECT count(*) FROM pg_temp.mk('outbox-ra', 'outbox_ra', 3);
CREATE TEMP TABLE ra AS
SELECT c.target, idemgate.fail_effect(c.effect_id, c.lease_owner, 'rate_limited', '429',
         CASE c.target WHEN 'target-1' THEN interval '30 seconds'
                       WHEN 'target-2' THEN interval '0.5 seconds'
                       ELSE interval '2 hours' END, 429) AS st
FROM idemgate.claim_effects('outbox_ra', 3) c;
SELECT r.target, r.st,
       CASE WHEN r.target <> 'target-2' THEN o.next_attempt_at - now() END AS delay_exact,
       o.next_attempt_at - now() >= interval '1 s' AND o.next_attempt_at - now() < interval '1.5 s' AS backoff_bounds
FROM ra r JOIN idemgate.outbox o ON o.idempotency_key = 'outbox-ra' AND o.target = r.target
ORDER BY r.target;
ROLLBACK;
-- The exponential part is capped too: attempt 20 of an endpoint allowing 100.
BEGIN;
SELECT idemgate.register_endpoint('outbox_cap', 'https://example.com/cap', '5 s', 100, false);
SELECT count(*) FROM pg_temp.mk('outbox-cap', 'outbox_cap', 1);
UPDATE idemgate.outbox SET attempts = 19 WHERE idempotency_key = 'outbox-cap';
SELECT attempt, idemgate.fail_effect(effect_id, lease_owner, 'transport') FROM idemgate.claim_effects('outbox_cap');
SELECT next_attempt_at - now() AS capped_delay FROM idemgate.outbox WHERE idempotency_key = 'outbox-cap';
ROLLBACK;

-- Exhaustion without an endpoint: 3 attempts, then failed + dead letter
-- with the full effect (type, target, payload), the error and the attempts.
SELECT count(*) FROM pg_temp.mk('outbox-ex', 'outbox_ex', 1);
CREATE FUNCTION pg_temp.ex_round() RETURNS text LANGUAGE plpgsql AS $$
DECLARE e record;
BEGIN
  UPDATE idemgate.outbox SET next_attempt_at = now() WHERE idempotency_key = 'outbox-ex';
  SELECT * INTO e FROM idemgate.claim_effects('outbox_ex', 1);
  RETURN e.attempt || ': ' || idemgate.fail_effect(e.effect_id, e.lease_owner, 'transport', 'connection refused');
END $$;
SELECT pg_temp.ex_round() FROM generate_series(1, 3);
SELECT d.kind, d.idempotency_key, d.effect_id = o.effect_id AS same_effect, d.effect_type, d.target,
       d.payload, d.error_class, d.error, d.attempts, d.reinjected_at
FROM idemgate.dead_letters d JOIN idemgate.outbox o USING (effect_id)
WHERE o.idempotency_key = 'outbox-ex';
SELECT o.state, r.state AS run_state FROM idemgate.outbox o JOIN idemgate.runs r USING (idempotency_key)
WHERE idempotency_key = 'outbox-ex';
SELECT kind, details->>'new_state' AS new_state, details->>'attempt' AS attempt, details->>'error_class' AS cls
FROM idemgate.events WHERE idempotency_key = 'outbox-ex' AND kind IN ('effect_failed', 'dead_lettered') ORDER BY id;

-- Expired leases. An expired lease that is not settled yet may still be
-- completed by its owner (the send happened). claim_effects settles the
-- others first: unknown without an endpoint; afterwards the stale owner's
-- complete_effect and fail_effect find nothing.
SELECT count(*) FROM pg_temp.mk('outbox-lease', 'outbox_lease', 2);
CREATE TEMP TABLE lc AS SELECT * FROM idemgate.claim_effects('outbox_lease', 2);
UPDATE idemgate.outbox SET lease_expires_at = now() - interval '1 second'
WHERE idempotency_key = 'outbox-lease';
SELECT idemgate.complete_effect(effect_id, lease_owner, 'late-but-real') AS expired_unsettled
FROM lc WHERE target = 'target-1';
SELECT count(*) AS claimed FROM idemgate.claim_effects('outbox_lease');
SELECT target, state, attempts, last_error FROM idemgate.outbox WHERE idempotency_key = 'outbox-lease' ORDER BY target;
SELECT idemgate.complete_effect(effect_id, lease_owner) AS stale_complete,
       idemgate.fail_effect(effect_id, lease_owner, 'transport') AS stale_fail
FROM lc WHERE target = 'target-2';
SELECT kind, details FROM idemgate.events
WHERE idempotency_key = 'outbox-lease' AND kind = 'effect_failed';
-- claim_effects only settles its own effect type
SELECT count(*) FROM pg_temp.mk('outbox-lease2', 'outbox_lease2', 1);
SELECT count(*) FROM idemgate.claim_effects('outbox_lease2');
UPDATE idemgate.outbox SET lease_expires_at = now() - interval '1 second'
WHERE idempotency_key = 'outbox-lease2';
SELECT count(*) FROM idemgate.claim_effects('outbox_claim');
SELECT state FROM idemgate.outbox WHERE idempotency_key = 'outbox-lease2';
-- With an endpoint that honours the key, an expired lease goes back to
-- pending with backoff (in a transaction, so a dispatcher never sees it).
BEGIN;
SELECT idemgate.register_endpoint('outbox_lease2', 'https://example.com/l2', '5 s', 3, true);
SELECT count(*) FROM idemgate.claim_effects('outbox_lease2');
SELECT state, next_attempt_at - now() >= interval '1 s' AS backed_off FROM idemgate.outbox
WHERE idempotency_key = 'outbox-lease2';
ROLLBACK;

-- Clean up this file's rows (other files share the database).
DELETE FROM idemgate.dead_letters WHERE idempotency_key LIKE 'outbox-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'outbox-%';
SELECT count(*) AS left_over FROM idemgate.outbox WHERE idempotency_key LIKE 'outbox-%';
