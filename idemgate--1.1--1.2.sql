\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.2'" to load this file. \quit

-- idemgate 1.1 → 1.2. Every schema change of version 1.2 lives in this
-- directory, one file per feature, applied in name order; the Makefile
-- assembles them into idemgate--1.1--1.2.sql. A fresh CREATE EXTENSION
-- runs idemgate--1.0.sql, idemgate--1.0--1.1.sql (both frozen) and then
-- this script, so a fresh install and an updated one are the same by
-- construction (test/t/100_update.pl checks both update paths).
-- sql/1.1--1.2/05_request_forms.sql
--
-- The jsonb forms for n8n, written out one by one so that a search for a
-- function's name finds its form (1.1 created them in a loop). Each
-- definition is exactly what 1.1 created: CREATE OR REPLACE keeps its
-- comment, owner, grants and bundle membership, and a fresh install runs
-- this file too. The C side is src/request_forms.c.

CREATE OR REPLACE FUNCTION idemgate.request_approval(request jsonb) RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_request_approval_request';

CREATE OR REPLACE FUNCTION idemgate.peek_approval(request jsonb) RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
                 expires_at timestamptz, card jsonb, effects jsonb)
    LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_peek_approval_request';

CREATE OR REPLACE FUNCTION idemgate.consume_approval(request jsonb) RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_consume_approval_request';

CREATE OR REPLACE FUNCTION idemgate.enqueue_effect(request jsonb) RETURNS TABLE(effect_ids uuid[], version bigint)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';

CREATE OR REPLACE FUNCTION idemgate.cas_transition(request jsonb) RETURNS bigint
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_cas_transition_request';

CREATE OR REPLACE FUNCTION idemgate.renew_lease(request jsonb) RETURNS timestamptz
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_renew_lease_request';

CREATE OR REPLACE FUNCTION idemgate.fail(request jsonb) RETURNS text
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_fail_request';

CREATE OR REPLACE FUNCTION idemgate.record_validation(request jsonb) RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1
    AS 'MODULE_PATHNAME', 'idemgate_record_validation_request';

CREATE OR REPLACE FUNCTION idemgate.claim_effects(request jsonb) RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
                 payload jsonb, attempt integer, lease_owner uuid)
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10
    AS 'MODULE_PATHNAME', 'idemgate_claim_effects_request';

CREATE OR REPLACE FUNCTION idemgate.complete_effect(request jsonb) RETURNS boolean
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_complete_effect_request';

CREATE OR REPLACE FUNCTION idemgate.fail_effect(request jsonb) RETURNS text
    LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'idemgate_fail_effect_request';
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
-- sql/1.1--1.2/40_effect_policies.sql
--
-- Policy per effect type, enforced by the database (src/effect_policies.c;
-- README.md "Effect policies", docs/outbox.md): an operator says which
-- effect types only a human may let out (requires_approval), whose
-- approval requests must name a requester and an audience
-- (requires_requester), what fraction of automatic enqueue_effect calls is
-- turned into an approval request instead (review_sample), and how long
-- automatic effects wait while an approver may still cancel them
-- (cancel_window).

-- The policies, one row per effect type (configuration, like endpoints:
-- pg_dump keeps it). reviews_requested counts the enqueue_effect calls
-- turned into a review, per type, since the policy was first set.
CREATE TABLE idemgate.effect_type_policies (
    effect_type        text PRIMARY KEY,
    requires_approval  boolean NOT NULL DEFAULT false,
    requires_requester boolean NOT NULL DEFAULT false,
    review_sample      real NOT NULL DEFAULT 0
                       CHECK (review_sample >= 0 AND review_sample <= 1),
    cancel_window      interval CHECK (cancel_window > interval '0'),
    reviews_requested  bigint NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_by         text
);
COMMENT ON TABLE idemgate.effect_type_policies IS
'Policy per effect type, written by set_effect_policy: requires_approval (enqueue_effect refuses the type), requires_requester (request_approval needs requested_by and audience), review_sample (fraction of automatic enqueue_effect calls turned into an approval request), cancel_window (automatic effects wait that long; an approver may cancel them meanwhile)';
COMMENT ON COLUMN idemgate.effect_type_policies.reviews_requested IS
'enqueue_effect calls with an effect of this type turned into an approval request by review_sample, since the policy was set';
SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_policies', '');
REVOKE ALL ON idemgate.effect_type_policies FROM PUBLIC;

CREATE VIEW idemgate.effect_policies AS
SELECT effect_type, requires_approval, requires_requester, review_sample, cancel_window,
       reviews_requested, updated_at, updated_by
  FROM idemgate.effect_type_policies;
COMMENT ON VIEW idemgate.effect_policies IS
'The policy of each effect type that has one (set_effect_policy), with how many enqueue_effect calls its review_sample turned into approval requests';
REVOKE ALL ON idemgate.effect_policies FROM PUBLIC;

CREATE FUNCTION idemgate.set_effect_policy(effect_type text,
                                           requires_approval boolean DEFAULT false,
                                           requires_requester boolean DEFAULT false,
                                           review_sample real DEFAULT 0,
                                           cancel_window interval DEFAULT NULL,
                                           actor text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_effect_policy';
COMMENT ON FUNCTION idemgate.set_effect_policy(text, boolean, boolean, real, interval, text) IS
'Set the policy of an effect type (all defaults = no restriction): requires_approval, requires_requester, review_sample (0..1), cancel_window; audited with actor (default: the calling role). Takes effect for every enqueue_effect and request_approval that starts after it commits';
REVOKE ALL ON FUNCTION idemgate.set_effect_policy(text, boolean, boolean, real, interval, text) FROM PUBLIC;

-- Cancel windows. An automatic effect of a type with a cancel_window is not
-- due before cancel_until (its not_before); until then an approver may
-- cancel it. NULL for every other effect.
ALTER TABLE idemgate.outbox ADD COLUMN cancel_until timestamptz;
COMMENT ON COLUMN idemgate.outbox.cancel_until IS
'End of the cancel window of an automatic effect whose type has a cancel_window (it is not due before then); an approver may cancel it with cancel_in_window until then. NULL otherwise';

-- The effects an approver may still cancel: pending, inside their window.
-- A window only comes from a policy (whose row set_effect_policy never
-- deletes), and an effect in its window is not due yet, so the look-up is
-- outbox_due_idx per policy type, never a scan of the whole outbox.
CREATE VIEW idemgate.cancel_windows AS
SELECT o.effect_id, o.idempotency_key, o.effect_type, o.target, o.payload, o.cancel_until, o.created_at
  FROM idemgate.effect_type_policies p
  JOIN idemgate.outbox o ON o.effect_type = p.effect_type
 WHERE o.state = 'pending'
   AND o.next_attempt_at > pg_catalog.now()
   AND o.cancel_until > pg_catalog.now();
COMMENT ON VIEW idemgate.cancel_windows IS
'Automatic effects still inside their cancel window (effect type policy cancel_window): pending, not due before cancel_until; an approver may cancel them with cancel_in_window';
REVOKE ALL ON idemgate.cancel_windows FROM PUBLIC;

CREATE FUNCTION idemgate.cancel_in_window(effect_id uuid, approver text, reason text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window';
COMMENT ON FUNCTION idemgate.cancel_in_window(uuid, text, text) IS
'An approver cancels an automatic effect inside its cancel window (pending, before cancel_until): cancelled, never sent, no dead letter; audited with the approver. IG002 once the window has closed or for an effect without one, IG003 for an unknown effect';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(uuid, text, text) FROM PUBLIC;

CREATE FUNCTION idemgate.cancel_in_window(request jsonb)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window_request';
COMMENT ON FUNCTION idemgate.cancel_in_window(jsonb) IS
'cancel_in_window() with its arguments in one JSON object {effect_id, approver, reason}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(jsonb) FROM PUBLIC;

-- enqueue_effect's result says when the call was turned into a review:
-- effect_ids and version keep their meaning (effect_ids is empty, nothing
-- was enqueued; version is the run's new one, awaiting_human), and a new
-- last column review_requested is NULL, or {"approval_id", "token",
-- "expires_at", "effect_types", "review_sample"} for a sampled review.
-- The result type changes, so both forms are made again (roles holding a
-- bundle get EXECUTE back in 99_release_grants.sql; bundle_members names
-- them by signature, which does not change).
DROP FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb);
CREATE FUNCTION idemgate.enqueue_effect(key text, owner uuid, version bigint, effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect';
COMMENT ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) IS
'The automatic path: as the live owner of a processing run, insert its effects into the outbox and approve the run in one step; effect ids (existing ones for an already enqueued (key, type, target)) and the new version, or a row of NULLs when ownership was lost. Effect policies apply: 42501 for a type that requires approval; a call sampled for review moves the run to awaiting_human instead and returns no effect ids and review_requested = {approval_id, token, expires_at, effect_types, review_sample}';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) FROM PUBLIC;

DROP FUNCTION idemgate.enqueue_effect(jsonb);
CREATE FUNCTION idemgate.enqueue_effect(request jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';
COMMENT ON FUNCTION idemgate.enqueue_effect(jsonb) IS
'enqueue_effect() with its arguments in one JSON object {key, owner, version, effects}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(jsonb) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.set_effect_policy(text,boolean,boolean,real,interval,text)'),
    ('approver', 'idemgate.cancel_in_window(uuid,text,text)'),
    ('operator', 'idemgate.cancel_in_window(uuid,text,text)'),
    ('approver', 'idemgate.cancel_in_window(jsonb)'),
    ('operator', 'idemgate.cancel_in_window(jsonb)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.effect_policies'),
    ('operator', 'idemgate.effect_policies'),
    ('operator', 'idemgate.effect_type_policies'),
    ('approver', 'idemgate.cancel_windows'),
    ('operator', 'idemgate.cancel_windows');
-- sql/1.1--1.2/41_rerun.sql
--
-- Re-runs (src/rerun.c; README.md "Dead letters", docs/operations.md):
-- reinjecting a run's dead letter re-posts its stored input to the
-- workflow's re-run endpoint, through the outbox, when one is registered.
-- The endpoint is the one of effect type 'idemgate.rerun:' || workflow in
-- idemgate.endpoints (so pause_effect_type, unregister_endpoint, the
-- effect_types view and the stuck_effects alert work on it as on any
-- type); effect types beginning with 'idemgate.' are refused to callers.

CREATE FUNCTION idemgate.register_rerun(workflow text, url text,
                                        headers jsonb DEFAULT '{}',
                                        timeout interval DEFAULT '10 seconds')
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_rerun';
COMMENT ON FUNCTION idemgate.register_rerun(text, text, jsonb, interval) IS
'Create or replace the re-run endpoint of a workflow: reinjecting one of its runs'' dead letters then POSTs the run''s stored input (as the body, with an Idempotency-Key) there through the outbox, as an effect of type idemgate.rerun:<workflow>. URL checked like register_endpoint''s; audited; remove it with unregister_endpoint(''idemgate.rerun:'' || workflow, actor)';
REVOKE ALL ON FUNCTION idemgate.register_rerun(text, text, jsonb, interval) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.register_rerun(text,text,jsonb,interval)');
-- sql/1.1--1.2/45_dispatcher_node.sql — this node's dispatchers
-- (docs/citus.md). node_dispatcher_status() is dispatcher_status() of one
-- node, with the node's name on Citus: what the alert views read (whether
-- a dispatcher serves this database here) and what the coordinator asks
-- each worker for. 55_dispatcher_status.sql then gives dispatcher_status()
-- its node column, once 50_unsettled_runs.sql has moved the alert views
-- over to this function.
CREATE FUNCTION idemgate.node_dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz, database text, node text)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_dispatcher_status';
REVOKE ALL ON FUNCTION idemgate.node_dispatcher_status() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.node_dispatcher_status() IS
'This node''s running dispatchers (dispatcher_status() of one node); node is host:port on Citus, NULL on a single node';

-- sql/1.1--1.2/50_unsettled_runs.sql
--
-- A run completes with its last effect under every isolation level
-- (docs/outbox.md, "Completing a run"; src/runs.c): the completion check
-- runs in a snapshot taken after the run's lock. Around it, a safety net
-- and an alert for approved runs whose effects are all settled, however
-- they got there (before this version, two effects completed at once in
-- REPEATABLE READ transactions left their run approved for ever):
--   complete_settled_runs(max_runs)  completes them; the dispatcher calls
--                                    it every second (src/dispatcher.c);
--   alert unsettled_runs             names them (workflow, first keys)
--                                    when they last more than a minute.
-- C: src/runs.c (CompleteSettledRuns), src/dispatcher.c.

-- ---------------------------------------------------------------------------
-- The alerts about runs (stalled_runs, unsettled_runs) and the safety net
-- find their runs through one partial index of the runs in flight:
-- processing, failed_retryable and approved, by updated_at then state, so
-- each reads only its own states. A claim adds one entry to it (a new run
-- is processing; bench/README.md), and a change of state is no longer a HOT
-- update (the predicate reads state). A second partial index would cost
-- every claim its opening and its predicate (about 7,700 CPU instructions
-- of 159,000, bench/claim/instructions.sh).
CREATE INDEX runs_open_idx ON idemgate.runs (updated_at, state)
    WHERE state IN ('processing', 'failed_retryable', 'approved');

-- ---------------------------------------------------------------------------
CREATE FUNCTION idemgate.complete_settled_runs(max_runs integer DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_settled_runs';
COMMENT ON FUNCTION idemgate.complete_settled_runs(integer) IS
'Complete the approved runs none of whose effects is in another state than completed or cancelled (each locked, SKIP LOCKED, and checked again after the lock), as their last effect should have; returns how many. max_runs NULL looks at every approved run; a number (1..100000) looks at that many, continuing where the previous call of this session stopped. The dispatcher calls it every second; call it where no dispatcher serves the database';
REVOKE ALL ON FUNCTION idemgate.complete_settled_runs(integer) FROM PUBLIC;
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.complete_settled_runs(integer)');
-- Roles that already hold operator get it from 99_release_grants.sql.

-- ---------------------------------------------------------------------------
-- Alerts: the 1.1 alerts plus
--   stalled_runs      per workflow: runs left processing with an expired
--                     lease, or failed_retryable and not redelivered, for
--                     longer than idemgate.alert_stalled_after (15 min);
--   terminal_failure  per workflow: runs failed for good in the last hour
--                     (open dead letters), at once;
--   lease_takeovers   per workflow: more than idemgate.alert_lease_takeovers
--                     (5) takeovers of expired leases in 10 minutes;
--   payload_mismatch  per workflow: claims refused with IG001 in the last
--                     hour (payload_mismatches());
--   unsettled_runs    per workflow: runs approved with all their effects
--                     settled for longer than a minute, not completed.
-- Each names the workflow and the first keys (at most 3, each cut to 64
-- characters: IDEMGATE_ALERT_FIRST_KEYS and IDEMGATE_ALERT_KEY_CHARS in
-- src/idemgate_limits.h), in its message and in the new column keys. The
-- silence check keeps the predicate of events_claim_workflow_idx.
-- Whoever redefines this view later: start from this file's definition.
-- The three parts of the alerts that read per-run tables in ways Citus
-- cannot run across shards (a recursive skip scan, look-ups per type, per
-- workflow and per run) are functions, each run once per read of the
-- view: standard SQL bodies, parsed here like a view's, with the plans the
-- view had. They read the tables as their owner, as the view does, so a
-- reader needs EXECUTE on them (the reader bundle). idemgate.distribute()
-- points each at its distributed version
-- (sql/1.1--1.2/62_distributed_alerts.sql).

-- Per effect type with pending effects: those due for longer than
-- stuck_after and, unless here (a dispatcher serves this database), the
-- HTTP ones due for longer than missing_after. The types come from a skip
-- scan of the partial index outbox_due_idx (effect_type, next_attempt_at)
-- WHERE pending, so that publish_alerts (every second) never reads a
-- healthy backlog row by row: each type costs an index range of its old
-- rows only. Effects are pending only once their run was approved; one
-- whose run was failed since is never sent either, so it counts as stuck
-- too (cancel_effect it).
CREATE FUNCTION idemgate.alert_pending_types(stuck_after interval, missing_after interval, here boolean)
RETURNS TABLE(effect_type text, stuck bigint, stuck_since timestamptz,
              overdue bigint, overdue_since timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
WITH RECURSIVE ptypes(effect_type) AS (
    (SELECT o.effect_type FROM idemgate.outbox o
      WHERE o.state = 'pending' ORDER BY o.effect_type LIMIT 1)
    UNION ALL
    SELECT (SELECT o.effect_type FROM idemgate.outbox o
             WHERE o.state = 'pending' AND o.effect_type > p.effect_type
             ORDER BY o.effect_type LIMIT 1)
      FROM ptypes p WHERE p.effect_type IS NOT NULL
)
SELECT p.effect_type, st.stuck, st.stuck_since, ov.overdue, ov.overdue_since
  FROM ptypes p
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS stuck, pg_catalog.min(o.next_attempt_at) AS stuck_since
        FROM idemgate.outbox o
       WHERE o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at < pg_catalog.now() - alert_pending_types.stuck_after) st
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS overdue, pg_catalog.min(o.next_attempt_at) AS overdue_since
        FROM idemgate.outbox o
       WHERE NOT alert_pending_types.here
         AND EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type)
         AND o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at <= pg_catalog.now() - alert_pending_types.missing_after) ov
 WHERE p.effect_type IS NOT NULL;
END;
REVOKE ALL ON FUNCTION idemgate.alert_pending_types(interval, interval, boolean) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_pending_types(interval, interval, boolean) IS
'Part of idemgate.alert_instances: per effect type, pending effects due for longer than stuck_after, and (unless here) HTTP effects due for longer than missing_after';

-- Per watched workflow: when it was last seen (registered, claimed, or a
-- duplicate or recovery of one of its runs).
CREATE FUNCTION idemgate.alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT w.workflow, w.expected_interval,
       GREATEST(w.created_at,
                (SELECT pg_catalog.max(r.created_at) FROM idemgate.runs r
                  WHERE r.workflow = w.workflow),
                (SELECT pg_catalog.max(e.at) FROM idemgate.events e
                  WHERE e.kind IN ('recovered', 'duplicate')
                    AND (e.details OPERATOR(pg_catalog.->>) 'workflow') = w.workflow))
  FROM idemgate.watched_workflows w;
END;
REVOKE ALL ON FUNCTION idemgate.alert_watched_workflows() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_watched_workflows() IS
'Part of idemgate.alert_instances: each watched workflow and when it was last seen';

-- Runs approved with every effect settled (completed or cancelled), and
-- when the last was settled. It looks at the 1000 runs approved last, at
-- least a minute ago (IDEMGATE_UNSETTLED_ALERT_RUNS, a range of
-- runs_open_idx): each costs a look-up of its effects, and the runs
-- waiting for deliveries or people (a backlog, unknown or failed effects)
-- can be many; complete_settled_runs() looks at all of them.
CREATE FUNCTION idemgate.alert_unsettled_runs()
RETURNS TABLE(workflow text, idempotency_key text, settled_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT a.workflow, a.idempotency_key,
       COALESCE((SELECT pg_catalog.max(o.updated_at) FROM idemgate.outbox o
                  WHERE o.idempotency_key = a.idempotency_key), a.updated_at)
  FROM (SELECT r.workflow, r.idempotency_key, r.updated_at
          FROM idemgate.runs r
         WHERE r.state = 'approved' AND r.updated_at < pg_catalog.now() - interval '1 minute'
         ORDER BY r.updated_at DESC
         LIMIT 1000) a
 -- a probe per run that stops at its first open effect
 WHERE (SELECT o.effect_id FROM idemgate.outbox o
         WHERE o.idempotency_key = a.idempotency_key
           AND o.state <> ALL ('{completed,cancelled}'::text[])
         LIMIT 1) IS NULL;
END;
REVOKE ALL ON FUNCTION idemgate.alert_unsettled_runs() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.alert_unsettled_runs() IS
'Part of idemgate.alert_instances: runs approved at least a minute ago (the last 1000) whose effects are all completed or cancelled, and when the last was settled';

CREATE OR REPLACE VIEW idemgate.alert_instances AS
WITH settings AS (
    SELECT COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_failures', true), '')::bigint,
                    10) AS max_failures,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_stuck_after', true), '')::interval,
                    interval '15 minutes') AS stuck_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_dispatcher_missing_after', true), '')::interval,
                    interval '1 minute') AS missing_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.actions_enabled', true), '')::boolean,
                    true) AS setting_enabled,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_stalled_after', true), '')::interval,
                    interval '15 minutes') AS stalled_after,
           COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_lease_takeovers', true), '')::bigint,
                    5) AS max_takeovers
), failures AS (
    -- Effects with a failed attempt in the last 10 minutes, still not delivered.
    SELECT 'effect'::text AS what, o.effect_type AS grp,
           pg_catalog.count(DISTINCT e.effect_id) AS n, pg_catalog.min(e.at) AS since
      FROM idemgate.events e
      JOIN idemgate.outbox o ON o.effect_id = e.effect_id
     WHERE e.kind = 'effect_failed'
       AND e.at > pg_catalog.now() - interval '10 minutes'
       AND o.state <> 'completed'
     GROUP BY o.effect_type
    UNION ALL
    -- Runs that failed for good in the last 10 minutes (a failed_terminal run
    -- is dead-lettered; a rejection is a decision and leaves no dead letter).
    SELECT 'run', r.workflow,
           pg_catalog.count(DISTINCT e.idempotency_key), pg_catalog.min(e.at)
      FROM idemgate.events e
      LEFT JOIN idemgate.runs r ON r.idempotency_key = e.idempotency_key
     WHERE e.kind = 'dead_lettered' AND e.effect_id IS NULL
       AND e.at > pg_catalog.now() - interval '10 minutes'
       AND r.state IS DISTINCT FROM 'completed'
     GROUP BY r.workflow
), dead AS (
    SELECT d.kind AS what,
           CASE WHEN d.kind = 'effect' THEN d.effect_type ELSE r.workflow END AS grp,
           pg_catalog.count(*) AS n, pg_catalog.min(d.dead_at) AS since
      FROM idemgate.dead_letters d
      LEFT JOIN idemgate.runs r ON d.kind = 'run' AND r.idempotency_key = d.idempotency_key
     WHERE d.reinjected_at IS NULL
       AND d.dead_at < pg_catalog.now() - interval '1 hour'
     GROUP BY 1, 2
), unknown AS (
    SELECT o.effect_type AS grp, pg_catalog.count(*) AS n, pg_catalog.min(o.updated_at) AS since
      FROM idemgate.outbox o
     WHERE o.state = 'unknown'
     GROUP BY o.effect_type
), watched AS (
    SELECT w.workflow, w.expected_interval, w.last_seen,
           pg_catalog.date_part('epoch', w.expected_interval)::bigint AS secs
      FROM idemgate.alert_watched_workflows() w
), switch AS (
    SELECT c.actions_enabled AND s.setting_enabled AS enabled, c.actions_enabled AS row_enabled,
           s.setting_enabled, c.changed_at, c.changed_by, c.reason
      FROM idemgate.control c, settings s
     WHERE c.singleton
), served AS (
    -- Whether a running dispatcher serves this database (shared memory).
    SELECT EXISTS (SELECT 1 FROM idemgate.node_dispatcher_status() ds
                    WHERE ds.database = pg_catalog.current_database()) AS here,
           (SELECT pg_catalog.string_agg(DISTINCT ds.database, ', ')
              FROM idemgate.node_dispatcher_status() ds) AS databases
), due AS (
    -- Per type: pending effects due for longer than the stuck threshold
    -- and, where no dispatcher serves this database, HTTP effects due for
    -- longer than the dispatcher_missing threshold (alert_pending_types).
    SELECT p.effect_type, p.stuck, p.stuck_since, p.overdue, p.overdue_since,
           EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type) AS http,
           EXISTS (SELECT 1 FROM idemgate.paused_effect_types pt WHERE pt.effect_type = p.effect_type) AS paused
      FROM settings s CROSS JOIN served sv
      CROSS JOIN LATERAL idemgate.alert_pending_types(s.stuck_after, s.missing_after, sv.here) p
), missing AS (
    SELECT pg_catalog.sum(d.overdue)::bigint AS n, pg_catalog.min(d.overdue_since) AS since,
           sv.databases AS served,
           pg_catalog.current_database()::text COLLATE "default" AS db
      FROM due d CROSS JOIN served sv
     WHERE d.http AND d.overdue > 0
     GROUP BY sv.databases
), stalled AS (
    -- Runs left processing with an expired lease, or failed_retryable and
    -- not redelivered, for longer than idemgate.alert_stalled_after, per
    -- workflow; since = when the lease expired or the run failed. A
    -- processing run's lease never ends before its last change
    -- (updated_at), so "updated_at older than the threshold" holds for
    -- every such run and makes this a range of runs_open_idx, which
    -- holds only runs in these two states and approved ones. The threshold
    -- is a scalar subquery, computed once: joined as a row, Citus made it
    -- a function scan that each shard re-read for every run (seconds with
    -- 40k runs processing).
    SELECT r.workflow, pg_catalog.count(*) AS n,
           pg_catalog.count(*) FILTER (WHERE r.state = 'processing') AS expired,
           pg_catalog.min(r.stalled_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(r.idempotency_key) > 64
                                      THEN pg_catalog.left(r.idempotency_key, 61) || '...'
                                      ELSE r.idempotency_key END
                                 ORDER BY r.stalled_at, r.idempotency_key))[1:3] AS keys
      FROM (SELECT r.workflow, r.idempotency_key, r.state,
                   CASE WHEN r.state = 'processing' THEN r.lease_expires_at ELSE r.updated_at END AS stalled_at
              FROM idemgate.runs r
             WHERE r.state IN ('processing', 'failed_retryable')
               AND r.updated_at < pg_catalog.now() - (SELECT s.stalled_after FROM settings s)) r
     WHERE r.stalled_at < pg_catalog.now() - (SELECT s.stalled_after FROM settings s)
     GROUP BY r.workflow
), terminal AS (
    -- Runs failed for good (dead-lettered, not reinjected) in the last
    -- hour, per workflow: fires at once. After an hour an open dead letter
    -- is the dead_letters alert's.
    SELECT r.workflow, pg_catalog.count(*) AS n, pg_catalog.min(d.dead_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(d.idempotency_key) > 64
                                      THEN pg_catalog.left(d.idempotency_key, 61) || '...'
                                      ELSE d.idempotency_key END
                                 ORDER BY d.dead_at, d.idempotency_key))[1:3] AS keys,
           (pg_catalog.array_agg(d.error_class ORDER BY d.dead_at, d.idempotency_key))[1] AS error_class
      FROM idemgate.dead_letters d
      LEFT JOIN idemgate.runs r ON r.idempotency_key = d.idempotency_key
     WHERE d.reinjected_at IS NULL AND d.kind = 'run'
       AND d.dead_at >= pg_catalog.now() - interval '1 hour'
     GROUP BY r.workflow
), takeovers AS (
    -- Claims that took a run over from an expired lease (recovered events
    -- from processing) in the last 10 minutes, per workflow.
    SELECT t.workflow, pg_catalog.sum(t.n)::bigint AS n, pg_catalog.min(t.first_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(t.idempotency_key) > 64
                                      THEN pg_catalog.left(t.idempotency_key, 61) || '...'
                                      ELSE t.idempotency_key END
                                 ORDER BY t.first_at, t.idempotency_key))[1:3] AS keys
      FROM (SELECT e.details OPERATOR(pg_catalog.->>) 'workflow' AS workflow, e.idempotency_key,
                   pg_catalog.count(*) AS n, pg_catalog.min(e.at) AS first_at
              FROM idemgate.events e
             WHERE e.kind = 'recovered' AND e.at > pg_catalog.now() - interval '10 minutes'
               AND (e.details OPERATOR(pg_catalog.->>) 'from') = 'processing'
             GROUP BY 1, 2) t
     GROUP BY t.workflow
), mismatches AS (
    -- Claims refused with IG001 (their transactions rolled back), counted
    -- in shared memory per workflow (src/payload_mismatches.c).
    SELECT m.workflow, m.mismatches AS n, m.first_at AS since, m.first_keys AS keys
      FROM idemgate.payload_mismatches() m
     WHERE m.firing
), unsettled AS (
    -- Runs approved with every effect settled (completed or cancelled) for
    -- longer than a minute, per workflow; since = when the last effect was
    -- settled. Such a run should have completed with its last effect
    -- (docs/outbox.md, "Completing a run"), and the dispatcher's
    -- complete_settled_runs() completes any it finds, so this fires where
    -- no dispatcher does (or it fails); alert_unsettled_runs() finds them.
    SELECT u.workflow, pg_catalog.count(*) AS n, pg_catalog.min(u.settled_at) AS since,
           (pg_catalog.array_agg(CASE WHEN pg_catalog.char_length(u.idempotency_key) > 64
                                      THEN pg_catalog.left(u.idempotency_key, 61) || '...'
                                      ELSE u.idempotency_key END
                                 ORDER BY u.settled_at, u.idempotency_key))[1:3] AS keys
      FROM idemgate.alert_unsettled_runs() u
     WHERE u.settled_at < pg_catalog.now() - interval '1 minute'
     GROUP BY u.workflow
), paused_pending AS (
    -- Pending effects of each paused type: index ranges of outbox_due_idx.
    SELECT o.effect_type, pg_catalog.count(*) AS n
      FROM idemgate.outbox o
     WHERE o.state = 'pending'
       AND o.effect_type = ANY (ARRAY(SELECT pt.effect_type FROM idemgate.paused_effect_types pt))
     GROUP BY o.effect_type
), raised AS (
    SELECT 'failure_rate'::text AS alert,
           CASE f.what WHEN 'effect' THEN 'effect_type:' || f.grp
                       ELSE COALESCE('workflow:' || f.grp, 'no_workflow') END AS subject,
           'critical'::text AS severity,
           CASE f.what
             WHEN 'effect' THEN f.n::text || CASE WHEN f.n = 1 THEN ' effect' ELSE ' effects' END
                                || ' of type ' || f.grp || ' not delivered'
             ELSE f.n::text || CASE WHEN f.n = 1 THEN ' run' ELSE ' runs' END
                  || COALESCE(' of workflow ' || f.grp, ' without a workflow') || ' failed'
           END AS text, ''::text AS suffix, f.n AS count, f.since, NULL::text[] AS keys
      FROM failures f, settings s
     WHERE f.n > s.max_failures
    UNION ALL
    SELECT 'dead_letters',
           CASE d.what WHEN 'effect' THEN 'effect_type:' || COALESCE(d.grp, '')
                       ELSE COALESCE('workflow:' || d.grp, 'no_workflow') END,
           'warning',
           d.n::text || CASE WHEN d.n = 1 THEN ' dead letter' ELSE ' dead letters' END
             || CASE d.what WHEN 'effect' THEN ' of type ' || COALESCE(d.grp, '')
                            ELSE COALESCE(' of workflow ' || d.grp, ' without a workflow') END
             || ' older than 1 hour', '',
           d.n, d.since, NULL
      FROM dead d
    UNION ALL
    SELECT 'unknown_effects', 'effect_type:' || u.grp, 'warning',
           u.n::text || CASE WHEN u.n = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || u.grp || ' in doubt',
           ' (maybe delivered: check with the provider, then resolve_effect)',
           u.n, u.since, NULL
      FROM unknown u
    UNION ALL
    SELECT 'silence', 'workflow:' || w.workflow, 'critical',
           'workflow ' || w.workflow || ' silent',
           ' (expected every '
             || CASE WHEN w.secs % 86400 = 0 THEN (w.secs / 86400)::text
                          || CASE WHEN w.secs = 86400 THEN ' day' ELSE ' days' END
                     WHEN w.secs % 3600 = 0 THEN (w.secs / 3600)::text || ' h'
                     WHEN w.secs % 60 = 0 THEN (w.secs / 60)::text || ' min'
                     ELSE w.secs::text || ' s' END || ')',
           pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.now() - w.last_seen)
                            / GREATEST(w.secs, 1))::bigint,
           w.last_seen, NULL
      FROM watched w
     WHERE pg_catalog.now() - w.last_seen > w.expected_interval * 2
    UNION ALL
    SELECT 'stuck_effects', 'effect_type:' || d.effect_type, 'warning',
           d.stuck::text || CASE WHEN d.stuck = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || d.effect_type || ' waiting to be sent',
           CASE WHEN d.paused THEN ' (type paused: resume_effect_type)'
                WHEN NOT sw.enabled THEN ' (kill switch off)'
                WHEN NOT d.http THEN ' (no endpoint, and no worker pulls this type: misspelled type or stopped puller?)'
                ELSE ' (endpoint registered but nothing sent: check dispatcher_status())' END,
           d.stuck, d.stuck_since, NULL
      FROM due d CROSS JOIN switch sw
     WHERE d.stuck > 0
    UNION ALL
    SELECT 'dispatcher_missing', 'database:' || m.db, 'critical',
           m.n::text || CASE WHEN m.n = 1 THEN ' HTTP effect' ELSE ' HTTP effects' END
             || ' due in database ' || m.db
             || ' and no running dispatcher serves it',
           COALESCE(' (dispatchers serve ' || m.served || '; set idemgate.database)',
                    ' (no dispatcher is running: is idemgate in shared_preload_libraries?)'),
           m.n, m.since, NULL
      FROM missing m
    UNION ALL
    SELECT 'kill_switch_off', 'kill_switch', 'info',
           'kill switch off',
           CASE WHEN NOT sw.row_enabled
                THEN ' (by ' || COALESCE(sw.changed_by, '?') || ': ' || COALESCE(sw.reason, '') || ')'
                ELSE ' (setting idemgate.actions_enabled is off)' END,
           1::bigint, CASE WHEN NOT sw.row_enabled THEN sw.changed_at END, NULL
      FROM switch sw
     WHERE NOT sw.enabled
    UNION ALL
    SELECT 'type_paused', 'effect_type:' || p.effect_type, 'info',
           'effect type ' || p.effect_type || ' paused',
           ' (' || COALESCE(pp.n, 0)::text
             || ' pending; by ' || p.paused_by || ': ' || p.reason || ')',
           COALESCE(pp.n, 0), p.paused_at, NULL
      FROM idemgate.paused_effect_types p
      LEFT JOIN paused_pending pp ON pp.effect_type = p.effect_type
    UNION ALL
    SELECT 'stalled_runs', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           CASE WHEN t.n = 1 THEN 'run ' || t.keys[1] ELSE t.n::text || ' runs' END
             || COALESCE(' of workflow ' || t.workflow, ' without a workflow') || ' stalled',
           ' ('
             || CASE WHEN t.n > 1 THEN 'first: ' || pg_catalog.array_to_string(t.keys, ', ') || '; ' ELSE '' END
             || CASE WHEN t.expired = t.n AND t.n = 1 THEN 'lease expired, not taken over'
                     WHEN t.expired = t.n THEN 'leases expired, not taken over'
                     WHEN t.expired = 0 THEN 'failed_retryable, not redelivered'
                     ELSE t.expired::text || ' with an expired lease, ' || (t.n - t.expired)::text
                          || ' failed_retryable not redelivered' END
             || ': is a worker down or a trigger off?)',
           t.n, t.since, t.keys
      FROM stalled t
    UNION ALL
    SELECT 'terminal_failure', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           CASE WHEN t.n = 1 THEN 'run ' || t.keys[1] ELSE t.n::text || ' runs' END
             || COALESCE(' of workflow ' || t.workflow, ' without a workflow') || ' failed for good',
           CASE WHEN t.n = 1 THEN ' (' || COALESCE(t.error_class, 'no error class')
                                  || '; its input is in the dead letter: reinject or supersede)'
                ELSE ' (first: ' || pg_catalog.array_to_string(t.keys, ', ')
                     || '; their inputs are in the dead letters: reinject or supersede)' END,
           t.n, t.since, t.keys
      FROM terminal t
    UNION ALL
    SELECT 'lease_takeovers', COALESCE('workflow:' || t.workflow, 'no_workflow'), 'warning',
           t.n::text || ' expired leases' || COALESCE(' of workflow ' || t.workflow, ' without a workflow')
             || ' taken over in 10 minutes',
           ' (first: ' || pg_catalog.array_to_string(t.keys, ', ')
             || '; workers dying, or leases shorter than the work: compare run_metrics())',
           t.n, t.since, t.keys
      FROM takeovers t CROSS JOIN settings s
     WHERE t.n > s.max_takeovers
    UNION ALL
    SELECT 'payload_mismatch', COALESCE('workflow:' || m.workflow, 'no_workflow'), 'critical',
           CASE WHEN m.n = 1 THEN 'key ' || m.keys[1] || COALESCE(' of workflow ' || m.workflow, ' without a workflow')
                                  || ' delivered again with a different payload'
                ELSE m.n::text || ' deliveries' || COALESCE(' of workflow ' || m.workflow, ' without a workflow')
                     || ' reused a key with a different payload' END,
           CASE WHEN m.n = 1 THEN ' (IG001, refused: stop and investigate upstream)'
                ELSE ' (first: ' || pg_catalog.array_to_string(m.keys, ', ')
                     || '; IG001, refused: stop and investigate upstream)' END,
           m.n, m.since, m.keys
      FROM mismatches m
    UNION ALL
    SELECT 'unsettled_runs', COALESCE('workflow:' || u.workflow, 'no_workflow'), 'warning',
           CASE WHEN u.n = 1 THEN 'run ' || u.keys[1] ELSE u.n::text || ' runs' END
             || COALESCE(' of workflow ' || u.workflow, ' without a workflow')
             || CASE WHEN u.n = 1 THEN ' approved with all its effects settled'
                     ELSE ' approved with all their effects settled' END,
           ' ('
             || CASE WHEN u.n > 1 THEN 'first: ' || pg_catalog.array_to_string(u.keys, ', ') || '; ' ELSE '' END
             || 'not completed: a dispatcher serving this database completes them;'
             || ' else call complete_settled_runs())',
           u.n, u.since, u.keys
      FROM unsettled u
)
SELECT r.alert, r.subject, r.severity,
       r.text
         || COALESCE(' since '
                     || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                                         THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END), '')
         || r.suffix AS message,
       r.count, r.since, r.keys
  FROM raised r;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.alert_pending_types(interval,interval,boolean)'),
    ('operator', 'idemgate.alert_watched_workflows()'),
    ('operator', 'idemgate.alert_unsettled_runs()'),
    ('reader', 'idemgate.alert_pending_types(interval,interval,boolean)'),
    ('reader', 'idemgate.alert_watched_workflows()'),
    ('reader', 'idemgate.alert_unsettled_runs()');

COMMENT ON VIEW idemgate.alert_instances IS
'idemgate.alerts plus the subject (effect type, workflow or database) that identifies each alert and, for alerts about runs, their first keys; read by publish_alerts and prometheus()';

COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type, workflow or database: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval), stuck_effects (due pending effects older than idemgate.alert_stuck_after), dispatcher_missing (HTTP effects due where no dispatcher runs), kill_switch_off and type_paused (info), stalled_runs (runs processing with an expired lease or failed_retryable for longer than idemgate.alert_stalled_after), terminal_failure (runs failed for good in the last hour), lease_takeovers (more than idemgate.alert_lease_takeovers takeovers of expired leases in 10 minutes), payload_mismatch (claims refused with IG001 in the last hour), unsettled_runs (runs approved with all their effects settled for longer than a minute, not completed); messages name the workflow and the first keys';
-- sql/1.1--1.2/55_dispatcher_status.sql — dispatcher_status() gains the
-- node (docs/citus.md): on a distributed install the coordinator shows
-- every node's dispatchers. The result type changes, so the function is
-- made again (no view uses it since 50_unsettled_runs.sql); roles holding
-- a bundle get EXECUTE back in 99_release_grants.sql (bundle_members names
-- it by signature).
DROP FUNCTION idemgate.dispatcher_status();
CREATE FUNCTION idemgate.dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz, database text, node text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  distributed boolean := false;
BEGIN
  RETURN QUERY SELECT * FROM idemgate.node_dispatcher_status();
  -- Citus's catalogs exist only with Citus: looked at through EXECUTE.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition'
            ' WHERE logicalrelid OPERATOR(pg_catalog.=) ''idemgate.runs''::pg_catalog.regclass)'
            ' AND pg_catalog.citus_is_coordinator()'
      INTO distributed;
  END IF;
  IF distributed THEN
    RETURN QUERY
      SELECT x.* FROM pg_catalog.run_command_on_workers(
               'SELECT COALESCE(pg_catalog.json_agg(d), ''[]'') FROM idemgate.node_dispatcher_status() d') w,
             pg_catalog.json_to_recordset(w.result::pg_catalog.json) AS x(
               slot integer, pid integer, started_at timestamptz, in_flight integer,
               rounds bigint, claimed bigint, completed bigint, failed bigint,
               released bigint, last_round_at timestamptz, database text, node text)
       WHERE w.success;
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION idemgate.dispatcher_status() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.dispatcher_status() IS
'One row per running dispatcher (none without shared_preload_libraries): requests in flight, counters since it started (claimed, completed, failed, released back to pending by the kill switch or a pause), the database it serves (idemgate.database) and, on Citus, the node (every node''s, on the coordinator)';

-- sql/1.1--1.2/60_distribute.sql — idemgate on Citus (docs/citus.md).
--
-- A single-node install is unchanged by this file: it only adds the
-- functions. idemgate.distribute() turns an installed database, empty or
-- not, into a distributed one: every per-run table gains a bucket column
-- (the first two bytes of SHA-256 of the run's key, src/distributed.c),
-- its primary and unique keys gain bucket, and it is distributed by bucket,
-- co-located with runs; every configuration table becomes a reference
-- table, copied to every node. Effect and approval ids made afterwards
-- carry their bucket, and so do tokens, so each call finds its one shard.

CREATE FUNCTION idemgate.key_bucket(key text) RETURNS integer
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_key_bucket';
COMMENT ON FUNCTION idemgate.key_bucket(text) IS
'The bucket of a run key: the first two bytes of its SHA-256, 0..65535; the distribution column of a distributed install';

CREATE FUNCTION idemgate.uuid_bucket(id uuid) RETURNS integer
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_uuid_bucket';
COMMENT ON FUNCTION idemgate.uuid_bucket(uuid) IS
'The bucket an effect or approval id carries (a version 8 UUID made on a distributed install), or NULL';

CREATE FUNCTION idemgate.routed_id(bucket integer) RETURNS bigint
LANGUAGE C VOLATILE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_routed_id';
COMMENT ON FUNCTION idemgate.routed_id(integer) IS
'A new dead letter id on a distributed install: bit 62, 46 random bits, the bucket in the low 16 bits';

-- The dispatcher's request body (src/outbox_dispatch.c): immutable, so
-- that its claim runs on Citus as on a single node.
CREATE FUNCTION idemgate.effect_envelope(effect_id uuid, idempotency_key text, effect_type text,
                                         target text, payload jsonb, attempt integer) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_effect_envelope';
REVOKE ALL ON FUNCTION idemgate.effect_envelope(uuid, text, text, text, jsonb, integer) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.effect_envelope(uuid, text, text, text, jsonb, integer) IS
'The body the dispatcher posts: {effect_id, idempotency_key, effect_type, target, payload, attempt} as jsonb text';

CREATE FUNCTION idemgate.distribute(shard_count integer DEFAULT 32) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t text;
  w record;
  v record;
  r record;
  ddl text;
  worker_ddl text;
  def text;
  newdef text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
    RAISE EXCEPTION 'idemgate.distribute needs the citus extension in this database'
      USING ERRCODE = '0A000',
            HINT = 'Preload citus before idemgate (shared_preload_libraries = ''citus,idemgate''), CREATE EXTENSION citus, add the workers, then call idemgate.distribute() on the coordinator.';
  END IF;
  IF NOT pg_catalog.citus_is_coordinator() THEN
    RAISE EXCEPTION 'idemgate.distribute runs on the Citus coordinator only'
      USING ERRCODE = '0A000',
            HINT = 'Connect to the coordinator and call it there.';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
              WHERE logicalrelid OPERATOR(pg_catalog.=) 'idemgate.runs'::pg_catalog.regclass) THEN
    RAISE NOTICE 'idemgate is already distributed; nothing changed';
    RETURN;
  END IF;
  IF shard_count IS NULL OR shard_count NOT BETWEEN 1 AND 64000 THEN
    RAISE EXCEPTION 'shard_count must be between 1 and 64000, got %', shard_count
      USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node
                  WHERE noderole OPERATOR(pg_catalog.=) 'primary' AND shouldhaveshards
                    AND groupid OPERATOR(pg_catalog.<>) 0) THEN
    RAISE EXCEPTION 'the Citus cluster has no worker to hold shards'
      USING ERRCODE = '0A000',
            HINT = 'Add workers with citus_add_node first.';
  END IF;

  -- Nothing may write the tables while they change hands.
  LOCK TABLE idemgate.runs, idemgate.outbox, idemgate.approvals, idemgate.events,
             idemgate.dead_letters IN ACCESS EXCLUSIVE MODE;
  PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
  -- control and paused_effect_types keep their send-barrier triggers on
  -- every copy (src/send_barrier.c); bundle_members its canonical-name one.
  PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);

  -- The bucket column and the keys that include it (Citus enforces a key
  -- on one shard only when it includes the distribution column; the names
  -- stay). The workers got the extension's tables with CREATE EXTENSION,
  -- outside Citus: their copies (empty, used to plan) change the same way.
  ddl := $ddl$
    ALTER TABLE idemgate.runs ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.outbox ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.approvals ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.events ADD COLUMN IF NOT EXISTS bucket integer;
    ALTER TABLE idemgate.dead_letters ADD COLUMN IF NOT EXISTS bucket integer;
    UPDATE idemgate.runs SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.outbox SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.approvals SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.dead_letters SET bucket = idemgate.key_bucket(idempotency_key) WHERE bucket IS NULL;
    UPDATE idemgate.events SET bucket = COALESCE(idemgate.key_bucket(idempotency_key), 0) WHERE bucket IS NULL;
    ALTER TABLE idemgate.runs ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT runs_pkey,
      ADD CONSTRAINT runs_pkey PRIMARY KEY (idempotency_key, bucket);
    ALTER TABLE idemgate.outbox ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT outbox_pkey,
      ADD CONSTRAINT outbox_pkey PRIMARY KEY (effect_id, bucket),
      DROP CONSTRAINT outbox_idempotency_key_effect_type_target_key,
      ADD CONSTRAINT outbox_idempotency_key_effect_type_target_key
        UNIQUE (idempotency_key, effect_type, target, bucket);
    ALTER TABLE idemgate.approvals ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT approvals_pkey,
      ADD CONSTRAINT approvals_pkey PRIMARY KEY (approval_id, bucket),
      DROP CONSTRAINT approvals_token_hash_key,
      ADD CONSTRAINT approvals_token_hash_key UNIQUE (token_hash, bucket);
    ALTER TABLE idemgate.events ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT events_pkey,
      ADD CONSTRAINT events_pkey PRIMARY KEY (id, bucket);
    ALTER TABLE idemgate.dead_letters ALTER COLUMN bucket SET NOT NULL,
      DROP CONSTRAINT dead_letters_pkey,
      ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id, bucket);
  $ddl$;
  -- Rows written on a worker (its dispatcher's events) take their ids from
  -- that worker's own identity sequence: each node counts in its own range,
  -- group id << 48, as Citus gives its own sequences on workers.
  worker_ddl := ddl || $seq$
    DO $restart$
    DECLARE
      g bigint := (SELECT groupid FROM pg_catalog.pg_dist_local_group);
    BEGIN
      EXECUTE pg_catalog.format('ALTER TABLE idemgate.events ALTER COLUMN id RESTART WITH %s', (g << 48) + 1);
      EXECUTE pg_catalog.format('ALTER TABLE idemgate.dead_letters ALTER COLUMN id RESTART WITH %s', (g << 48) + 1);
    END
    $restart$;
  $seq$;
  FOR w IN SELECT * FROM pg_catalog.run_command_on_workers(worker_ddl) LOOP
    IF NOT w.success THEN
      RAISE EXCEPTION 'could not prepare idemgate''s tables on worker %:%: %', w.nodename, w.nodeport, w.result
        USING ERRCODE = '55000',
              HINT = 'Every worker needs the same idemgate version (CREATE EXTENSION propagated by Citus); fix the worker and call idemgate.distribute() again.';
    END IF;
  END LOOP;
  EXECUTE ddl;

  -- Configuration: a copy on every node.
  FOREACH t IN ARRAY ARRAY['control', 'endpoints', 'watched_workflows', 'bundle_members',
                           'granted_bundles', 'paused_effect_types', 'alert_state',
                           'metrics_rollup', 'effect_type_rollup', 'run_metrics_rollup',
                           'effect_type_grants', 'effect_type_policies'] LOOP
    PERFORM pg_catalog.create_reference_table(pg_catalog.format('idemgate.%I', t)::pg_catalog.regclass);
  END LOOP;

  -- Per-run tables: one shard group per bucket range.
  PERFORM pg_catalog.create_distributed_table('idemgate.runs', 'bucket',
                                              shard_count => shard_count, colocate_with => 'none');
  FOREACH t IN ARRAY ARRAY['outbox', 'approvals', 'events', 'dead_letters'] LOOP
    PERFORM pg_catalog.create_distributed_table(pg_catalog.format('idemgate.%I', t)::pg_catalog.regclass,
                                                'bucket', colocate_with => 'idemgate.runs');
  END LOOP;

  -- A claim that is its whole transaction runs on its key's node
  -- (66_claim_in_bucket.sql): the function goes with the bucket's shard.
  PERFORM pg_catalog.create_distributed_function(
    'idemgate.claim_in_bucket(integer,text,jsonb,interval,text,uuid,text)'::pg_catalog.regprocedure,
    '$1', colocate_with => 'idemgate.runs');

  -- The views join per-run tables on the key or the effect id; Citus runs
  -- such a join shard by shard only when it also joins on bucket (the same
  -- for the same key): each join of two such columns gains it. A view this
  -- cannot fix keeps its definition (docs/citus.md, "Limits").
  FOR v IN SELECT c.oid::pg_catalog.regclass AS rel FROM pg_catalog.pg_class c
            WHERE c.relnamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace
              AND c.relkind OPERATOR(pg_catalog.=) 'v'
            ORDER BY c.oid LOOP
    def := pg_catalog.pg_get_viewdef(v.rel);
    newdef := pg_catalog.regexp_replace(def,
      '\((\w+)\.(idempotency_key|effect_id) = (\w+)\.\2\)',
      '((\1.\2 = \3.\2) AND (\1.bucket = \3.bucket))', 'g');
    IF newdef OPERATOR(pg_catalog.<>) def THEN
      BEGIN
        EXECUTE pg_catalog.format('CREATE OR REPLACE VIEW %s AS %s', v.rel, newdef);
      EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'view % keeps its single-node joins: %', v.rel, SQLERRM;
      END;
    END IF;
  END LOOP;

  -- The parts of the alerts Citus cannot run across shards read through
  -- their distributed versions (sql/1.1--1.2/62_distributed_alerts.sql);
  -- the view keeps the functions, whose bodies change.
  FOR r IN SELECT p.oid, p.proname, p.pronargs FROM pg_catalog.pg_proc p
             WHERE p.pronamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace
               AND p.proname OPERATOR(pg_catalog.=) ANY ('{alert_pending_types,alert_watched_workflows,alert_unsettled_runs}')
             ORDER BY p.proname LOOP
    EXECUTE pg_catalog.format(
      'CREATE OR REPLACE FUNCTION idemgate.%I(%s) RETURNS %s LANGUAGE sql STABLE SECURITY DEFINER'
      ' SET search_path = pg_catalog, pg_temp AS %L',
      r.proname, pg_catalog.pg_get_function_arguments(r.oid), pg_catalog.pg_get_function_result(r.oid),
      pg_catalog.format('SELECT * FROM idemgate.%I(%s)', 'distributed_' OPERATOR(pg_catalog.||) r.proname,
                        (SELECT pg_catalog.string_agg('$' OPERATOR(pg_catalog.||) i, ', ')
                           FROM pg_catalog.generate_series(1, r.pronargs) i)));
  END LOOP;

  -- Least privilege as on one node (64_distributed_privileges.sql): the
  -- views of a bundle read as their owner, and each role already granted
  -- a bundle gets its rights on the shards and the workers.
  FOR r IN SELECT DISTINCT m.rel FROM idemgate.bundle_members m
             JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) m.rel
            WHERE c.relkind OPERATOR(pg_catalog.=) 'v'
            ORDER BY 1 LOOP
    PERFORM idemgate.distributed_wrap_view(r.rel);
  END LOOP;
  FOR r IN SELECT DISTINCT gb.role::pg_catalog.regrole AS role
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles ro ON ro.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
            ORDER BY 1 LOOP
    PERFORM idemgate.distributed_sync_grants(r.role);
  END LOOP;

END
$$;
REVOKE ALL ON FUNCTION idemgate.distribute(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION idemgate.key_bucket(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION idemgate.uuid_bucket(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION idemgate.routed_id(integer) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distribute(integer) IS
'Citus: distribute every per-run table by bucket, co-located, and make configuration tables reference tables; run once on the coordinator (docs/citus.md)';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distribute(integer)'),
    ('operator', 'idemgate.key_bucket(text)'),
    ('operator', 'idemgate.uuid_bucket(uuid)'),
    ('operator', 'idemgate.routed_id(integer)'),
    ('operator', 'idemgate.effect_envelope(uuid,text,text,text,jsonb,integer)'),
    ('operator', 'idemgate.node_dispatcher_status()'),
    ('reader', 'idemgate.node_dispatcher_status()'),
    ('reader', 'idemgate.key_bucket(text)'),
    ('reader', 'idemgate.uuid_bucket(uuid)');
-- sql/1.1--1.2/62_distributed_alerts.sql — the alerts on Citus
-- (docs/citus.md). Three parts of idemgate.alert_instances read per-run
-- tables in ways Citus cannot run across shards: a recursive skip scan of
-- the pending effects, and look-ups correlated with each watched workflow
-- and each approved run. Each has a version here made of statements Citus
-- runs on every shard at once or on one, and idemgate.distribute() points
-- the view's function at it. The rest of the view runs on the coordinator
-- as it is. The search_path is pinned, so the operators are pg_catalog's.
-- Each is meant to run on the coordinator, in the view's last step; that
-- step reads reference tables, and where Citus does not run it locally
-- (citus.enable_local_execution off, EXPLAIN ANALYZE) it sends it to a
-- placement through a connection: there the function's own distributed
-- reads are nested, which Citus refuses unless allowed. They only read,
-- so allowing it costs nothing but that, in that case, they do not see
-- what the caller's transaction wrote and has not committed.

-- alert_pending_types on Citus. The effects wait on the workers, so here
-- (the coordinator's dispatcher) is replaced by: every node holding shards
-- of runs has a dispatcher serving this database, asked of the workers
-- (dispatcher_status()) only when HTTP effects are overdue. Without the
-- skip scan, each shard reads the entries of outbox_due_idx older than the
-- smaller threshold (an index-only pass, no heap reads for a healthy
-- backlog).
CREATE FUNCTION idemgate.distributed_alert_pending_types(stuck_after interval, missing_after interval,
                                                         here boolean)
RETURNS TABLE(effect_type text, stuck bigint, stuck_since timestamptz,
              overdue bigint, overdue_since timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  http_types text[] := ARRAY(SELECT ep.effect_type FROM idemgate.endpoints ep);
  types text[];
  stucks bigint[];
  stuck_sinces timestamptz[];
  overdues bigint[];
  overdue_sinces timestamptz[];
  served boolean := true;
BEGIN
  SELECT pg_catalog.array_agg(x.effect_type), pg_catalog.array_agg(x.stuck),
         pg_catalog.array_agg(x.stuck_since), pg_catalog.array_agg(x.overdue),
         pg_catalog.array_agg(x.overdue_since)
    INTO types, stucks, stuck_sinces, overdues, overdue_sinces
    FROM (SELECT o.effect_type,
                 pg_catalog.count(*) FILTER (WHERE o.next_attempt_at < pg_catalog.now() - stuck_after) AS stuck,
                 pg_catalog.min(o.next_attempt_at) FILTER (WHERE o.next_attempt_at < pg_catalog.now() - stuck_after) AS stuck_since,
                 pg_catalog.count(*) FILTER (WHERE o.effect_type = ANY (http_types)
                                               AND o.next_attempt_at <= pg_catalog.now() - missing_after) AS overdue,
                 pg_catalog.min(o.next_attempt_at) FILTER (WHERE o.effect_type = ANY (http_types)
                                                             AND o.next_attempt_at <= pg_catalog.now() - missing_after) AS overdue_since
            FROM idemgate.outbox o
           WHERE o.state = 'pending'
             AND o.next_attempt_at <= pg_catalog.now() - LEAST(stuck_after, missing_after)
           GROUP BY o.effect_type) x;
  IF 0 < ANY (overdues) THEN
    -- Citus's catalogs exist only with Citus: read through EXECUTE.
    EXECUTE $q$
      SELECT NOT EXISTS (
               SELECT 1 FROM pg_catalog.pg_dist_shard s
                 JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid
                 JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid
                WHERE s.logicalrelid = 'idemgate.runs'::pg_catalog.regclass
                  AND NOT EXISTS (SELECT 1 FROM idemgate.dispatcher_status() d
                                   WHERE d.database = pg_catalog.current_database()
                                     AND d.node = n.nodename || ':' || n.nodeport))
    $q$ INTO served;
  END IF;
  RETURN QUERY
    SELECT t.effect_type, t.stuck, t.stuck_since,
           CASE WHEN served THEN 0 ELSE t.overdue END,
           CASE WHEN NOT served THEN t.overdue_since END
      FROM unnest(types, stucks, stuck_sinces, overdues, overdue_sinces)
             AS t(effect_type, stuck, stuck_since, overdue, overdue_since);
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_alert_pending_types(interval, interval, boolean) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_pending_types(interval, interval, boolean) IS
'alert_pending_types on Citus, read on the coordinator: here is replaced by whether every node holding shards has a dispatcher serving this database';

-- alert_watched_workflows on Citus: per watched workflow, the latest run
-- and the latest duplicate or recovery, each a maximum Citus takes on
-- every shard (the ends of runs_workflow_created_idx and
-- events_claim_workflow_idx) and then of those.
CREATE FUNCTION idemgate.distributed_alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  w record;
  last_run timestamptz;
  last_claim timestamptz;
BEGIN
  FOR w IN SELECT ww.workflow, ww.expected_interval, ww.created_at
             FROM idemgate.watched_workflows ww ORDER BY ww.workflow LOOP
    SELECT pg_catalog.max(r.created_at) INTO last_run
      FROM idemgate.runs r WHERE r.workflow = w.workflow;
    SELECT pg_catalog.max(e.at) INTO last_claim
      FROM idemgate.events e
     WHERE e.kind IN ('recovered', 'duplicate') AND (e.details ->> 'workflow') = w.workflow;
    workflow := w.workflow;
    expected_interval := w.expected_interval;
    last_seen := GREATEST(w.created_at, last_run, last_claim);
    RETURN NEXT;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_alert_watched_workflows() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_watched_workflows() IS
'alert_watched_workflows on Citus, read on the coordinator';

-- alert_unsettled_runs on Citus: the same 1000 runs approved last (each
-- shard's latest, merged), then one read of their effects by bucket and
-- key, grouped per run (a group never spans shards).
CREATE FUNCTION idemgate.distributed_alert_unsettled_runs()
RETURNS TABLE(workflow text, idempotency_key text, settled_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  workflows text[];
  keys text[];
  buckets integer[];
  approved_at timestamptz[];
  open_keys text[];
  last_keys text[];
  last_at timestamptz[];
BEGIN
  SELECT pg_catalog.array_agg(a.workflow), pg_catalog.array_agg(a.idempotency_key),
         pg_catalog.array_agg(a.bucket), pg_catalog.array_agg(a.updated_at)
    INTO workflows, keys, buckets, approved_at
    FROM (SELECT r.workflow, r.idempotency_key, r.bucket, r.updated_at
            FROM idemgate.runs r
           WHERE r.state = 'approved' AND r.updated_at < pg_catalog.now() - interval '1 minute'
           ORDER BY r.updated_at DESC
           LIMIT 1000) a;
  IF keys IS NULL THEN
    RETURN;
  END IF;
  SELECT pg_catalog.array_agg(x.idempotency_key) FILTER (WHERE x.open),
         pg_catalog.array_agg(x.idempotency_key), pg_catalog.array_agg(x.last_at)
    INTO open_keys, last_keys, last_at
    FROM (SELECT o.idempotency_key,
                 pg_catalog.bool_or(o.state <> ALL ('{completed,cancelled}'::text[])) AS open,
                 pg_catalog.max(o.updated_at) AS last_at
            FROM idemgate.outbox o
           WHERE o.bucket = ANY (buckets) AND o.idempotency_key = ANY (keys)
           GROUP BY o.bucket, o.idempotency_key) x;
  RETURN QUERY
    SELECT a.workflow, a.idempotency_key, COALESCE(l.last_at, a.approved_at)
      FROM unnest(workflows, keys, approved_at) AS a(workflow, idempotency_key, approved_at)
      LEFT JOIN unnest(last_keys, last_at) AS l(idempotency_key, last_at)
        ON l.idempotency_key = a.idempotency_key
     WHERE a.idempotency_key <> ALL (COALESCE(open_keys, '{}'));
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_alert_unsettled_runs() FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_alert_unsettled_runs() IS
'alert_unsettled_runs on Citus, read on the coordinator';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distributed_alert_pending_types(interval,interval,boolean)'),
    ('operator', 'idemgate.distributed_alert_watched_workflows()'),
    ('operator', 'idemgate.distributed_alert_unsettled_runs()');
-- sql/1.1--1.2/64_distributed_privileges.sql — least-privilege roles on
-- Citus (docs/citus.md, "Roles"). Two things differ from one node:
--   - Citus reads a view's tables on the shards as the user who queries
--     the view, not as the view's owner (citusdata/citus#1683): a reader
--     granted SELECT on alerts would need the tables behind it. So
--     distribute() keeps each view of a bundle as an owner-only copy,
--     idemgate.distributed_<view>, read by a SECURITY DEFINER function,
--     idemgate.distributed_<view>_read(), and the view becomes a read of
--     that function: the same columns, the same grants, nothing more to
--     grant. A filter on such a view applies after it has read every
--     shard. A later version that redefines one of these views must, on
--     a distributed install, redefine its copy instead.
--   - Citus passes GRANTs on idemgate's tables on to their shards (and
--     shards copy their table's grants when they are made), but not USAGE
--     on the extension's schema: distributed_sync_grants(role) gives the
--     workers what the role holds on the coordinator; grant_role and
--     revoke_role call it, and distribute() for every role already
--     granted.

-- distributed_sync_grants(role): USAGE on schema idemgate on every worker
-- iff the role has it on the coordinator, and EXECUTE on the reader of
-- each wrapped view iff it may read the view. Returns the number of
-- workers (0 on a single node). Citus itself passes on GRANT and REVOKE
-- on idemgate's tables to their shards.
CREATE FUNCTION idemgate.distributed_sync_grants(role regrole) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  f record;
  n integer;
  name text := pg_catalog.quote_ident(role::text);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
    RETURN 0;
  END IF;
  -- The readers of wrapped views (distributed_wrap_view).
  FOR f IN SELECT p.oid::pg_catalog.regprocedure AS fn, c.oid::pg_catalog.regclass AS v
             FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_class c
               ON c.relname = pg_catalog.substring(p.proname, '^distributed_(.*)_read$')
              AND c.relnamespace = 'idemgate'::pg_catalog.regnamespace
            WHERE p.pronamespace = 'idemgate'::pg_catalog.regnamespace LOOP
    EXECUTE pg_catalog.format(CASE WHEN pg_catalog.has_table_privilege(role, f.v, 'SELECT')
                                   THEN 'GRANT EXECUTE ON FUNCTION %s TO %s'
                                   ELSE 'REVOKE EXECUTE ON FUNCTION %s FROM %s' END, f.fn, name);
  END LOOP;
  -- Citus's functions exist only with Citus: through EXECUTE.
  EXECUTE 'SELECT pg_catalog.count(*)::integer FROM pg_catalog.run_command_on_workers($1)'
    USING CASE WHEN pg_catalog.has_schema_privilege(role, 'idemgate', 'USAGE')
               THEN 'GRANT USAGE ON SCHEMA idemgate TO ' || name
               ELSE 'REVOKE USAGE ON SCHEMA idemgate FROM ' || name END
    INTO n;
  RETURN n;
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_sync_grants(regrole) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_sync_grants(regrole) IS
'Citus: give the workers the schema USAGE the role holds on the coordinator, and it EXECUTE on the readers of the views it may read (grant_role, revoke_role and distribute() call it; call it for each role after adding a worker); returns the number of workers, 0 on a single node';

-- distributed_wrap_view(view): the view reads through its owner-only
-- copy (see above). Both exist on the coordinator only: Citus is not asked
-- to make them on the workers (it refuses the view's dependency on the
-- function), so the function is not a bundle member (bundle_members is
-- a reference table, whose trigger checks functions on every node):
-- distributed_sync_grants gives EXECUTE on it to the roles that may read
-- the view.
CREATE FUNCTION idemgate.distributed_wrap_view(v regclass) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET citus.enable_ddl_propagation = off
AS $$
DECLARE
  base text := (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = v);
  copy text := pg_catalog.format('idemgate.%I', 'distributed_' || base);
  reader text := pg_catalog.format('idemgate.%I', 'distributed_' || base || '_read');
BEGIN
  EXECUTE pg_catalog.format('CREATE VIEW %s AS %s', copy, pg_catalog.pg_get_viewdef(v));
  EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM PUBLIC', copy);
  EXECUTE pg_catalog.format(
    'CREATE FUNCTION %s() RETURNS SETOF %s LANGUAGE sql STABLE SECURITY DEFINER'
    ' SET search_path = pg_catalog, pg_temp AS %L',
    reader, copy, 'SELECT * FROM ' || copy);
  EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s() FROM PUBLIC', reader);
  EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s() IS %L', reader,
    'Citus: reads ' || v::text || ' as its owner (sql/1.1--1.2/64_distributed_privileges.sql)');
  EXECUTE pg_catalog.format('CREATE OR REPLACE VIEW %s AS SELECT * FROM %s()', v, reader);
END
$$;
REVOKE ALL ON FUNCTION idemgate.distributed_wrap_view(regclass) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.distributed_wrap_view(regclass) IS
'Citus, called by distribute(): the view reads through a SECURITY DEFINER function over an owner-only copy of itself';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distributed_sync_grants(regrole)'),
    ('operator', 'idemgate.distributed_wrap_view(regclass)');
-- sql/1.1--1.2/66_claim_in_bucket.sql — a claim that is its whole
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
CREATE FUNCTION idemgate.claim_in_bucket(bucket integer, key text, payload jsonb, lease interval,
                                         workflow text, owner uuid, origin text)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint,
              result jsonb, mismatch_workflow text)
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_in_bucket';
REVOKE ALL ON FUNCTION idemgate.claim_in_bucket(integer, text, jsonb, interval, text, uuid, text) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.claim_in_bucket(integer, text, jsonb, interval, text, uuid, text) IS
'Citus: claim() of a key in its bucket, delegated by Citus to the node of that bucket''s shard (internal: claim() calls it; payload_mismatch is an outcome here)';
-- Operators hold every function (a claim through it checks its bucket).
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.claim_in_bucket(integer,text,jsonb,interval,text,uuid,text)');
-- sql/1.1--1.2/90_token_quiet_roles.sql
--
-- Roles that already hold client or approver (granted under an earlier
-- version) get the role settings grant_role gives such roles from 1.2 on,
-- so that approval tokens stay out of the server log (docs/operations.md,
-- "Approval tokens stay out of the server log"; src/privileges.c). A role
-- dropped since its grant leaves its granted_bundles row behind: skipped.
DO $$
DECLARE r record; s record;
BEGIN
  FOR r IN SELECT DISTINCT gb.role::pg_catalog.text AS role
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles pr ON pr.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
            WHERE gb.bundle OPERATOR(pg_catalog.=) ANY ('{client,approver}'::pg_catalog.text[])
            ORDER BY 1
  LOOP
    FOR s IN SELECT * FROM (VALUES ('log_min_error_statement', 'panic'),
                                   ('log_error_verbosity', 'terse'),
                                   ('log_statement', 'none'),
                                   ('log_min_duration_statement', '-1'),
                                   ('log_parameter_max_length', '0'),
                                   ('log_parameter_max_length_on_error', '0')) AS t(name, value)
    LOOP
      EXECUTE pg_catalog.format('ALTER ROLE %s SET %s = %L', r.role, s.name, s.value);
    END LOOP;
  END LOOP;
END $$;
-- sql/1.1--1.2/99_release_grants.sql — runs last (as in 1.0--1.1).
--
-- Roles that already hold a bundle (granted_bundles: grant_role under the
-- old version) get every member this update added to it, as grant_role
-- gives them in a fresh install; the feature files above only insert their
-- new functions and tables into bundle_members.
--
-- PostgreSQL records every GRANT run inside an extension script as an
-- initial privilege of the object (pg_init_privs), and pg_dump leaves
-- initial privileges out of a dump: a dump of the updated database would
-- restore without these grants. They are the DBA's grants (grant_role),
-- not the extension's, so they are taken out of pg_init_privs again, for
-- every member object, whichever script granted them. TAP 100 checks that
-- an updated database has the same ACLs, initial privileges and pg_dump
-- output as a fresh install whose roles got the same bundles.
DO $$
DECLARE g record;
BEGIN
  -- A role dropped since grant_role (DROP OWNED + DROP ROLE) leaves its
  -- granted_bundles row behind: skipped, or the whole update would fail.
  FOR g IN SELECT DISTINCT gb.role::pg_catalog.text AS role, m.fn, m.rel::pg_catalog.text AS rel
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
             JOIN idemgate.bundle_members m ON m.bundle OPERATOR(pg_catalog.=) gb.bundle
            ORDER BY 1, 2, 3
  LOOP
    IF g.fn IS NOT NULL THEN
      EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', g.fn, g.role);
    ELSE
      EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %s', g.rel, g.role);
    END IF;
  END LOOP;
END $$;

UPDATE pg_catalog.pg_init_privs p
   SET initprivs = ARRAY(SELECT a FROM pg_catalog.unnest(p.initprivs) WITH ORDINALITY AS u(a, n)
                          WHERE NOT EXISTS (
                                SELECT 1 FROM pg_catalog.aclexplode(ARRAY[u.a]) x
                                  JOIN idemgate.granted_bundles gb
                                    ON gb.role::pg_catalog.oid OPERATOR(pg_catalog.=) x.grantee
                                 WHERE x.grantee OPERATOR(pg_catalog.<>) e.extowner)
                          ORDER BY u.n)
  FROM pg_catalog.pg_extension e, pg_catalog.pg_depend d
 WHERE e.extname OPERATOR(pg_catalog.=) 'idemgate'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) e.oid
   AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND p.classoid OPERATOR(pg_catalog.=) d.classid
   AND p.objoid OPERATOR(pg_catalog.=) d.objid
   AND p.privtype OPERATOR(pg_catalog.=) 'e';
