-- sql/tables/runs.sql — the idempotency ledger, one row per business event
-- (src/ledger/runs.c).
--
-- Integrity rules live in the C code, not in CHECK constraints: PostgreSQL
-- 15 rebuilds a table's CHECK expressions from their stored text for every
-- SPI execution that writes the table (about 10 µs per claim), and every
-- writer of these columns is our own C code (test/sql/integrity_rules.sql
-- shows each rule still holds):
--   idempotency_key 1..512 bytes   CheckKeyText, on every key argument
--   state one of the six states    SetRunState refuses any other; the
--                                  claim statement writes 'processing'
CREATE TABLE idemgate.runs (
    idempotency_key  text PRIMARY KEY,
    workflow         text,
    state            text NOT NULL,
    payload_hash     bytea NOT NULL,
    payload          jsonb,
    lease_owner      uuid,
    lease_expires_at timestamptz,
    lease_started_at timestamptz,
    version          bigint NOT NULL DEFAULT 0,
    failures         integer NOT NULL DEFAULT 0,
    result           jsonb,
    replaces_key     text,
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at       timestamptz NOT NULL DEFAULT pg_catalog.now()
);

-- The columns that later versions added are added here too, after the
-- table, in the same order: a column added with a constant default keeps
-- it as the column's "missing value" (pg_attribute.attmissingval), which
-- pg_dump --binary-upgrade shows, and a fresh install must equal an
-- updated one there too (test/t/100_update.pl). origin and recovered_from
-- are nullable without a default, so the claim's direct path writes them
-- without a default to evaluate; output_invalid and invalid_outputs have
-- constant defaults, so it keeps the table's shape
-- (src/ledger/claim_direct.c).
ALTER TABLE idemgate.runs
    ADD COLUMN validations integer NOT NULL DEFAULT 0,
    ADD COLUMN origin text,
    ADD COLUMN recovered_from text,
    ADD COLUMN output_invalid boolean NOT NULL DEFAULT false,
    ADD COLUMN invalid_outputs integer NOT NULL DEFAULT 0;

COMMENT ON TABLE idemgate.runs IS 'Idempotency ledger: one row per business event key, with its lease, state and result';
COMMENT ON COLUMN idemgate.runs.state IS
'processing, awaiting_human, approved, completed, failed_retryable or failed_terminal (kept by the C code, see test/sql/integrity_rules.sql)';
COMMENT ON COLUMN idemgate.runs.lease_started_at IS 'When the current owner took the lease; renewals never extend past this plus idemgate.max_lease_life';
COMMENT ON COLUMN idemgate.runs.failures IS 'How many times the run has failed (idemgate.fail); compared with idemgate.max_run_attempts';
COMMENT ON COLUMN idemgate.runs.validations IS
'How many times record_validation checked this run''s model output (the attempt number of bounded repair)';
COMMENT ON COLUMN idemgate.runs.origin IS
'Where the first claim''s trigger came from (claim''s origin: a webhook, schedule, error trigger, re-run...), NULL when not given';
COMMENT ON COLUMN idemgate.runs.recovered_from IS
'The state the last takeover took the run from: processing (its lease had expired) or failed_retryable (a redelivery); NULL when never taken over';
COMMENT ON COLUMN idemgate.runs.output_invalid IS
'The latest record_validation of this run was invalid: enqueue_effect and request_approval refuse (IG004)';
COMMENT ON COLUMN idemgate.runs.invalid_outputs IS
'How many record_validation calls of this run were invalid; one more than idemgate.max_repairs ends the run (invalid_output)';

-- The silence alert asks for the last run of each watched workflow. A run
-- without a workflow can never be watched, so it is left out of the index:
-- claims without a workflow pay no second index insert.
CREATE INDEX runs_workflow_created_idx ON idemgate.runs (workflow, created_at)
    WHERE workflow IS NOT NULL;

-- Retention reads only what it deletes (src/operations/retention.c): purge
-- also asks created_at < bound (implied by updated_at < bound), and this
-- BRIN index finds those runs in the old page ranges without reading the
-- recent ones. autosummarize summarises each filled range as it is left
-- behind.
CREATE INDEX runs_created_brin ON idemgate.runs USING brin (created_at)
    WITH (autosummarize = on);

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

SELECT pg_catalog.pg_extension_config_dump('idemgate.runs', '');
REVOKE ALL ON idemgate.runs FROM PUBLIC;
