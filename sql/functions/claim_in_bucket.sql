-- sql/functions/claim_in_bucket.sql

-- claim_in_bucket: a claim that is its whole
-- transaction, on Citus, runs on the worker holding its key
-- (docs/citus.md, "Claims"; C: src/runs.c, src/shard_autocommit.c).
--
-- claim() on the coordinator would plan the claim statement there and
-- send it inside a transaction block: two round trips, and the
-- coordinator's CPU per claim was 40% of the cluster's. distribute()
-- makes claim_in_bucket a distributed function whose first argument is
-- the distribution column's value (the key's bucket), co-located with
-- runs. So when claim() is the whole transaction, it calls
-- claim_in_bucket with citus.function_opens_transaction_block off, and
-- Citus delegates the call to the node of that bucket's shard: one round
-- trip, the claim's statements run there against the local shard, in
-- that node's transaction, all or nothing. A claim inside a bigger
-- transaction stays in it and does not come here.
--
-- It refuses a bucket that is not the key's (a row must live in its
-- key's shard). Only the owner calls it: claim() is SECURITY DEFINER. A
-- payload mismatch is an outcome here, not an error, so that claim()
-- raises IG001 where it was called, and counts it in that node's
-- payload_mismatch alert.
CREATE OR REPLACE FUNCTION idemgate.claim_in_bucket(bucket integer, key text, payload jsonb, lease interval,
                                                    workflow text, owner uuid, origin text)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint,
              result jsonb, mismatch_workflow text)
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_in_bucket';
COMMENT ON FUNCTION idemgate.claim_in_bucket(integer, text, jsonb, interval, text, uuid, text) IS
'Citus: claim() of a key in its bucket, delegated by Citus to the node of that bucket''s shard (internal: claim() calls it; payload_mismatch is an outcome here)';
REVOKE ALL ON FUNCTION idemgate.claim_in_bucket(integer,text,jsonb,interval,text,uuid,text) FROM PUBLIC;
