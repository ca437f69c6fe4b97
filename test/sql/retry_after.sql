-- A provider's Retry-After is honoured even when it is longer than
-- idemgate.max_backoff (1 hour here, the default), up to 24 hours: the
-- effect is not due before then, so it is never retried early. A
-- Retry-After beyond 24 hours is not shortened into an early retry: the
-- effect fails with a dead letter that says why. The backoff itself stays
-- capped by max_backoff. Through fail_effect (the pull API); the
-- dispatcher passes the header's value the same way (src/delivery/outcomes.c).
-- Effect types have no endpoint. One transaction, so that now() is the
-- time of every failure and the waits compare exactly. pgTAP.
\i test/sql/include/pgtap.psql
BEGIN;

-- mk(key, type) claims key and enqueues one effect of type, then leases it.
CREATE FUNCTION pg_temp.mk(k text, t text) RETURNS TABLE(effect_id uuid, lease_owner uuid) LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, jsonb_build_object('k', k));
  PERFORM idemgate.enqueue_effect(k, c.lease_owner, c.version,
                                  jsonb_build_object('type', t, 'target', 'x', 'payload', '{}'::jsonb));
  RETURN QUERY SELECT e.effect_id, e.lease_owner FROM idemgate.claim_effects(t) e;
END $$;

SELECT * FROM no_plan();

SELECT is(current_setting('idemgate.max_backoff'), '1h', 'max_backoff is 1 hour');

-- 3 hours, three times max_backoff: pending, due exactly 3 hours after the
-- failure (not the 1 hour cap), the attempt counted.
CREATE TEMP TABLE ra3 AS SELECT * FROM pg_temp.mk('retry-after-3h', 'ra_3h');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', 'HTTP 429', '3 hours', 429) FROM ra3),
          'pending', 'Retry-After 3 hours: pending');
SELECT results_eq($$SELECT state, attempts, next_attempt_at - now() FROM idemgate.outbox WHERE idempotency_key = 'retry-after-3h'$$,
                  $$VALUES ('pending', 1, interval '3 hours')$$, 'not due before 3 hours, past max_backoff');
SELECT is((SELECT count(*) FROM idemgate.claim_effects('ra_3h')), 0::bigint, 'claim_effects does not take it now');
SELECT is((SELECT details->>'retry_at' FROM idemgate.events
            WHERE idempotency_key = 'retry-after-3h' AND kind = 'effect_failed')::timestamptz - now(),
          interval '3 hours', 'the effect_failed event says when it will be retried');

-- unavailable (502/503/504) honours it the same way.
CREATE TEMP TABLE ra5 AS SELECT * FROM pg_temp.mk('retry-after-5h', 'ra_5h');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'unavailable', 'HTTP 503', '5 hours', 503) FROM ra5),
          'pending', 'Retry-After 5 hours on a 503: pending');
SELECT is((SELECT next_attempt_at - now() FROM idemgate.outbox WHERE idempotency_key = 'retry-after-5h'),
          interval '5 hours', 'due in 5 hours');

-- Exactly 24 hours is still honoured.
CREATE TEMP TABLE ra24 AS SELECT * FROM pg_temp.mk('retry-after-24h', 'ra_24h');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', 'HTTP 429', '24 hours', 429) FROM ra24),
          'pending', 'Retry-After 24 hours: pending');
SELECT is((SELECT next_attempt_at - now() FROM idemgate.outbox WHERE idempotency_key = 'retry-after-24h'),
          interval '24 hours', 'due in exactly 24 hours');

-- One second more: never retried early, so failed with a dead letter that
-- names the wait asked for and the limit; no retry is scheduled.
CREATE TEMP TABLE ra25 AS SELECT * FROM pg_temp.mk('retry-after-25h', 'ra_25h');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', 'HTTP 429', '24 hours 1 second', 429) FROM ra25),
          'failed', 'Retry-After 24 hours and 1 second: failed');
SELECT results_eq($$SELECT kind, effect_type, error_class, error, attempts FROM idemgate.dead_letters
                     WHERE idempotency_key = 'retry-after-25h'$$,
                  $$VALUES ('effect', 'ra_25h', 'rate_limited',
                            'HTTP 429 (Retry-After 86401 s is longer than the 86400 s a retry may wait; reinject it once the provider is ready)', 1)$$,
                  'a dead letter says how long the provider asked for and the limit');
SELECT is((SELECT details->>'new_state' FROM idemgate.events WHERE idempotency_key = 'retry-after-25h' AND kind = 'effect_failed'),
          'failed', 'the effect_failed event records the failure, no retry_at');

-- A shorter Retry-After than the backoff still loses to the backoff, and
-- the backoff alone is still capped by max_backoff (test outbox).
CREATE TEMP TABLE ra0 AS SELECT * FROM pg_temp.mk('retry-after-short', 'ra_short');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rate_limited', NULL, '0.1 seconds') FROM ra0),
          'pending', 'a 0.1 s Retry-After: pending');
SELECT ok((SELECT next_attempt_at - now() >= interval '1 s' AND next_attempt_at - now() < interval '1.5 s'
             FROM idemgate.outbox WHERE idempotency_key = 'retry-after-short'),
          'the 1 s backoff wins over a shorter Retry-After');

-- The jsonb form takes the header's delta-seconds as a string: 7200 s is
-- twice max_backoff and honoured.
CREATE TEMP TABLE raj AS SELECT * FROM pg_temp.mk('retry-after-jsonb', 'ra_jsonb');
SELECT is((SELECT idemgate.fail_effect(jsonb_build_object('effect_id', effect_id, 'owner', lease_owner,
                                                          'error_class', 'unavailable', 'retry_after', '7200')) FROM raj),
          'pending', 'jsonb form, retry_after "7200": pending');
SELECT is((SELECT next_attempt_at - now() FROM idemgate.outbox WHERE idempotency_key = 'retry-after-jsonb'),
          interval '2 hours', 'due in 2 hours');

-- A class that is never retried ignores Retry-After as before.
CREATE TEMP TABLE rar AS SELECT * FROM pg_temp.mk('retry-after-rejected', 'ra_rejected');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', 'HTTP 400', '48 hours', 400) FROM rar),
          'failed', 'rejected: failed whatever Retry-After says');
SELECT is((SELECT error FROM idemgate.dead_letters WHERE idempotency_key = 'retry-after-rejected'),
          'HTTP 400', 'its dead letter keeps the error as given');

SELECT * FROM finish();
ROLLBACK;
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
