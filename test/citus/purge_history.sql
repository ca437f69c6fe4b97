-- test/citus/purge_history.sql — finished and unfinished runs three days
-- old, then purge('1 day'), for test/citus/t/060_operator_reads.pl, which
-- runs it on a single node and on a Citus coordinator and compares the
-- output: what purge returned and recorded, which rows are left, and the
-- figures of metrics(), run_metrics() and effect_type_metrics() before
-- and after (the same: purge keeps them in the rollups). One transaction,
-- rolled back; keys are many and spread, so on Citus they lie on every
-- shard.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only on
BEGIN;
SET LOCAL timezone = 'UTC';
SET LOCAL client_min_messages = error;

-- 20 runs of ph-mail whose effect was delivered: completed.
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ph-mail', 'target', 't' || i, 'payload', '{}'::jsonb))
    FROM generate_series(1, 20) i,
         LATERAL idemgate.claim('ph-done-' || i, '{}', workflow => 'ph') c) x \g /dev/null
UPDATE idemgate.outbox SET next_attempt_at = now() - interval '1 second' WHERE effect_type = 'ph-mail';
SELECT count(idemgate.complete_effect(c.effect_id, c.lease_owner, 'p-' || c.target))
  FROM idemgate.claim_effects('ph-mail', 100, '1 minute') c \g /dev/null

-- 6 runs sent to a person: 4 approved (their effect is cancelled since),
-- 2 rejected.
CREATE TEMP TABLE ph_tokens ON COMMIT DROP AS
  SELECT c.idempotency_key, a.token
    FROM generate_series(1, 6) i,
         LATERAL idemgate.claim('ph-human-' || i, '{}', workflow => 'ph') c,
         LATERAL idemgate.request_approval(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ph-post', 'target', 't' || i, 'payload', '{}'::jsonb)) a;
SELECT count(*)
  FROM (SELECT token, row_number() OVER (ORDER BY idempotency_key) AS i FROM ph_tokens) t,
       LATERAL idemgate.consume_approval(t.token, CASE WHEN t.i % 3 = 0 THEN 'reject' ELSE 'approve' END,
                                         'ph-boss') c \g /dev/null
-- (the ids first: on Citus a call in a query over a distributed table
-- would run on the shard)
SELECT array_agg(o.effect_id) AS post_ids FROM idemgate.outbox o WHERE o.effect_type = 'ph-post' \gset
SELECT count(idemgate.cancel_effect(id, 'ph-boss', 'scripted')) FROM unnest(:'post_ids'::uuid[]) id \g /dev/null

-- 5 runs failed for good (open dead letters: kept), 2 of which were
-- reinjected since (purged).
SELECT count(idemgate.fail(c.idempotency_key, c.lease_owner, c.version, 'model', 'no draft', false))
  FROM generate_series(1, 5) i,
       LATERAL idemgate.claim('ph-dead-' || i, '{}', workflow => 'ph') c \g /dev/null
UPDATE idemgate.dead_letters SET reinjected_at = now() WHERE idempotency_key IN ('ph-dead-1', 'ph-dead-2');

-- 4 runs with an effect still pending (kept), 3 still processing (kept).
SELECT count(*) FROM (
  SELECT idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
           jsonb_build_object('type', 'ph-later', 'target', 't', 'payload', '{}'::jsonb))
    FROM generate_series(1, 4) i,
         LATERAL idemgate.claim('ph-open-' || i, '{}', workflow => 'ph') c) x \g /dev/null
SELECT count(*) FROM generate_series(1, 3) i, LATERAL idemgate.claim('ph-busy-' || i, '{}', workflow => 'ph') c \g /dev/null

-- All of it three days old; 2 finished runs changed 12 hours ago (kept).
UPDATE idemgate.runs SET created_at = now() - interval '3 days', updated_at = now() - interval '3 days'
 WHERE idempotency_key LIKE 'ph-%';
UPDATE idemgate.runs SET updated_at = now() - interval '12 hours'
 WHERE idempotency_key IN ('ph-done-19', 'ph-done-20');

SELECT 'states|' || state || '|' || count(*) FROM idemgate.runs
 WHERE idempotency_key LIKE 'ph-%' GROUP BY state ORDER BY state;
SELECT 'metrics before|' || m::text FROM idemgate.metrics(now() - interval '7 days') m;
SELECT 'run_metrics before|' || m::text FROM idemgate.run_metrics(now() - interval '7 days') m
 WHERE workflow = 'ph';
SELECT 'type_metrics before|' || m::text FROM idemgate.effect_type_metrics() m
 WHERE effect_type LIKE 'ph-%' ORDER BY effect_type;

SELECT 'purged|' || idemgate.purge(interval '1 day');

-- (this purge's event: a dispatcher purges too, by idemgate.retention)
SELECT 'purged event|' || (details - 'older_than')::text FROM idemgate.events
 WHERE kind = 'purged' AND details ->> 'older_than' = '1 day' ORDER BY at DESC, id DESC LIMIT 1;
SELECT 'left runs|' || string_agg(idempotency_key, ',' ORDER BY idempotency_key) FROM idemgate.runs
 WHERE idempotency_key LIKE 'ph-%';
SELECT 'left rows|' || (SELECT count(*) FROM idemgate.events WHERE idempotency_key LIKE 'ph-%')
       || '|' || (SELECT count(*) FROM idemgate.outbox WHERE idempotency_key LIKE 'ph-%')
       || '|' || (SELECT count(*) FROM idemgate.approvals WHERE idempotency_key LIKE 'ph-%')
       || '|' || (SELECT count(*) FROM idemgate.dead_letters WHERE idempotency_key LIKE 'ph-%');
SELECT 'orphans|' || (SELECT count(*) FROM idemgate.events e WHERE e.idempotency_key LIKE 'ph-%'
                         AND e.idempotency_key NOT IN (SELECT r.idempotency_key FROM idemgate.runs r))
       || '|' || (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key LIKE 'ph-%'
                    AND o.idempotency_key NOT IN (SELECT r.idempotency_key FROM idemgate.runs r));
SELECT 'metrics after|' || m::text FROM idemgate.metrics(now() - interval '7 days') m;
SELECT 'run_metrics after|' || m::text FROM idemgate.run_metrics(now() - interval '7 days') m
 WHERE workflow = 'ph';
SELECT 'type_metrics after|' || m::text FROM idemgate.effect_type_metrics() m
 WHERE effect_type LIKE 'ph-%' ORDER BY effect_type;
ROLLBACK;
