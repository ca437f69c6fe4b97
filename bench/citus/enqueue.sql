-- A new key claimed and one effect of type bench enqueued on it, in one
-- transaction (bench/citus/run.sh, with the kill switch off).
\set n random(1, 9000000000000000000)
SELECT e.version FROM idemgate.claim('deliver-' || :n, '{"order": 4471}'::jsonb) c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    jsonb_build_object('type', 'bench', 'target', 'customer-' || :n,
                       'payload', jsonb_build_object('n', (:n)::bigint, 'subject', 'Order shipped'))) e;
