-- sql/1.1--1.2/40_alerts_seeds.sql
--
-- Nothing fails silently, alerts name the business event, durations to
-- size leases by, and events that carry what the seeds list (README.md
-- "Operations"; docs/operations.md "Alerts", "Run processing times", "The
-- audit trail"). C: src/runs.c, src/claim_direct.c, src/payload_mismatches.c,
-- src/alerts.c, src/metrics.c, src/endpoints.c.

-- ---------------------------------------------------------------------------
-- Runs: where the trigger came from, and what a takeover took the run from.
-- Both are nullable without a default, so adding them rewrites nothing and
-- the claim's direct path writes them without a default to evaluate.
ALTER TABLE idemgate.runs ADD COLUMN origin text, ADD COLUMN recovered_from text;
COMMENT ON COLUMN idemgate.runs.origin IS
'Where the first claim''s trigger came from (claim''s origin: a webhook, schedule, error trigger, re-run...), NULL when not given';
COMMENT ON COLUMN idemgate.runs.recovered_from IS
'The state the last takeover took the run from: processing (its lease had expired) or failed_retryable (a redelivery); NULL when never taken over';

-- The alerts about runs find them through runs_open_idx
-- (50_unsettled_runs.sql).

-- claim gains origin (SPEC: optional arguments may be added at the end).
-- A function's arguments cannot change in place: it is dropped and
-- created again, with its comment and privileges, and its bundle entries
-- renamed; 99_release_grants.sql gives it back to the roles that hold
-- client or operator.
DROP FUNCTION idemgate.claim(text, jsonb, interval, text, uuid);
CREATE FUNCTION idemgate.claim(key text, payload jsonb, lease interval DEFAULT '5 minutes',
                               workflow text DEFAULT NULL, owner uuid DEFAULT NULL,
                               origin text DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim';
COMMENT ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid, text) IS
'Atomically claim an idempotency key: claimed (new key), recovered (retryable or expired lease taken over) or duplicate (earlier state and result); IG001 when the payload differs. origin (where the trigger came from) is kept on the run and in the recovered and duplicate events';
REVOKE ALL ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid, text) FROM PUBLIC;
UPDATE idemgate.bundle_members SET fn = 'idemgate.claim(text,jsonb,interval,text,uuid,text)'
 WHERE fn OPERATOR(pg_catalog.=) 'idemgate.claim(text,jsonb,interval,text,uuid)';

COMMENT ON FUNCTION idemgate.claim(jsonb) IS
'claim() with its arguments in one JSON object {key, payload, lease, workflow, owner, origin}: the robust form for n8n''s Postgres node';

-- What happened to each key: the first claim's entry also shows its
-- origin and the input's hash (hex SHA-256 of the payload, the value the
-- claim compares); the rest is 1.1's definition.
CREATE OR REPLACE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key, 'origin', r.origin,
               'payload_hash', pg_catalog.encode(r.payload_hash, 'hex'))) AS details,
           NULL::uuid AS effect_id
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details, e.effect_id
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL
    UNION ALL
    SELECT o.idempotency_key, o.updated_at, 'effect_completed', NULL,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'provider_id', o.provider_id, 'status', o.last_status, 'attempt', o.attempts)),
           o.effect_id
      FROM idemgate.outbox o
     WHERE o.state OPERATOR(pg_catalog.=) 'completed'
    UNION ALL
    -- A run with effects completes only when its last effect is settled.
    SELECT r.idempotency_key, r.updated_at, 'state_changed', NULL,
           pg_catalog.jsonb_build_object('from', 'approved', 'to', 'completed', 'version', r.version),
           NULL
      FROM idemgate.runs r
     WHERE r.state OPERATOR(pg_catalog.=) 'completed'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key);

-- ---------------------------------------------------------------------------
-- No internal host names in events a reader sees: endpoint_registered now
-- records a fingerprint of the host (the first 16 hex digits of its
-- SHA-256: two registrations with the same fingerprint point at the same
-- host), not the host. Events written before the update are rewritten the
-- same way.
UPDATE idemgate.events
   SET details = (details OPERATOR(pg_catalog.-) 'host')
                 OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('host_sha256',
                     pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(
                         pg_catalog.convert_to(details OPERATOR(pg_catalog.->>) 'host', 'UTF8')), 'hex'), 16))
 WHERE kind OPERATOR(pg_catalog.=) 'endpoint_registered'
   AND details OPERATOR(pg_catalog.?) 'host';

-- ---------------------------------------------------------------------------
-- Payload mismatches (IG001): the claim's transaction rolls back, so they
-- are counted in shared memory (src/payload_mismatches.c), one row per
-- workflow with mismatches since the server started; lost at a restart.
CREATE FUNCTION idemgate.payload_mismatches()
RETURNS TABLE(workflow text, mismatches bigint, first_at timestamptz, last_at timestamptz,
              first_keys text[], firing boolean)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_payload_mismatches';
COMMENT ON FUNCTION idemgate.payload_mismatches() IS
'Claims refused with IG001 (same key, different payload) per workflow since the server started (their transactions rolled back; counted in shared memory, so only with shared_preload_libraries, and lost at a restart): mismatches, first and last time, the first keys, and firing (the last one less than an hour ago: the payload_mismatch alert)';
REVOKE ALL ON FUNCTION idemgate.payload_mismatches() FROM PUBLIC;

CREATE FUNCTION idemgate.clear_payload_mismatches() RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_clear_payload_mismatches';
COMMENT ON FUNCTION idemgate.clear_payload_mismatches() IS
'Forget this database''s payload mismatch counts once they are investigated (the payload_mismatch alert clears at once; not undone by a rollback); audited as payload_mismatches_cleared. Returns the number of mismatches forgotten';
REVOKE ALL ON FUNCTION idemgate.clear_payload_mismatches() FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Run processing times per workflow (src/metrics.c). metrics() keeps its
-- 1.1 row type: a column added to a function's result changes its type
-- (DROP and CREATE), which would break every view or client that reads it
-- by position, so these figures get a function of their own, read by
-- prometheus() as well.
CREATE TABLE idemgate.run_metrics_rollup (
    hour               timestamptz NOT NULL,
    workflow           text,
    first_at           timestamptz NOT NULL,
    last_at            timestamptz NOT NULL,
    processing_seconds double precision[] NOT NULL DEFAULT '{}',
    retry_exhausted    bigint NOT NULL DEFAULT 0,
    UNIQUE NULLS NOT DISTINCT (hour, workflow)
);
COMMENT ON TABLE idemgate.run_metrics_rollup IS
'What run_metrics() counted from purged runs, per UTC hour and workflow (NULL: runs without one): the processing times in seconds and the runs whose retries ran out; first_at/last_at bound the times counted. Written only by purge';
SELECT pg_catalog.pg_extension_config_dump('idemgate.run_metrics_rollup', '');
REVOKE ALL ON idemgate.run_metrics_rollup FROM PUBLIC;

CREATE FUNCTION idemgate.run_metrics(since timestamptz DEFAULT pg_catalog.now() - interval '7 days')
RETURNS TABLE(workflow text, attempts bigint, processing_p50 interval, processing_p95 interval,
              processing_max interval, retry_exhausted bigint)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_run_metrics';
COMMENT ON FUNCTION idemgate.run_metrics(timestamptz) IS
'Per workflow (NULL: runs without one), over [since, now()]: attempts that left processing (completed, failed, or handed to an approval or the outbox), their processing time from the claim (p50, p95, max: what a lease is sized from), and runs failed for good after idemgate.max_run_attempts retryable failures (beside metrics().retry_exhausted, which counts effects); purge keeps the figures';
REVOKE ALL ON FUNCTION idemgate.run_metrics(timestamptz) FROM PUBLIC;
ALTER FUNCTION idemgate.run_metrics(timestamptz) SET jit = off;

COMMENT ON FUNCTION idemgate.prometheus() IS
'metrics() over the last 7 days in the Prometheus text exposition format: gauges named idemgate_*, windowed ones labelled window="7d"; per workflow (label workflow) idemgate_run_attempts, _run_processing_p50_seconds, _p95_seconds, _max_seconds, idemgate_run_retry_exhausted; per effect type (label effect_type) idemgate_effects_pending, _oldest_pending_seconds, _unknown, _completed_total, _failed_total, _paused; idemgate_dispatchers_running; idemgate_alerts_firing per alert and idemgate_alert_first_keys for alerts about runs';

-- ---------------------------------------------------------------------------
-- Alerts. alert_state keeps the first keys published (a cleared alert's
-- NOTIFY payload carries what it said last).
ALTER TABLE idemgate.alert_state ADD COLUMN keys text[];
COMMENT ON COLUMN idemgate.alert_state.keys IS
'The first keys of the runs the alert was about when last published (stalled_runs, terminal_failure, lease_takeovers, payload_mismatch), NULL for others';

-- The alerts view with stalled_runs, terminal_failure, lease_takeovers and
-- payload_mismatch is defined once, in 50_unsettled_runs.sql.

-- Readers read the alerts view, which calls payload_mismatches(); the
-- reports are the readers' too.
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('reader', 'idemgate.payload_mismatches()'),
    ('operator', 'idemgate.payload_mismatches()'),
    ('operator', 'idemgate.clear_payload_mismatches()'),
    ('reader', 'idemgate.run_metrics(timestamptz)'),
    ('operator', 'idemgate.run_metrics(timestamptz)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.run_metrics_rollup');
-- Roles that already hold a bundle get its new members from 99_release_grants.sql.
