
-- Performance (issue 12). Works the same on a fresh install (1.0 + this
-- update) and on a populated 1.0 database.

-- 1. Integrity rules of the hot tables move from CHECK constraints into the
-- C code. PostgreSQL 15 rebuilds a table's CHECK expressions from their
-- stored text (stringToNode) for every SPI execution that writes the table:
-- about 10 µs per claim. Every writer of these columns is our own C code:
--   runs.idempotency_key 1..512 bytes  CheckKeyText (src/args.c), on every key argument
--   runs.state one of the six states   SetRunState refuses any other (src/runs.c);
--                                      the claim statement writes 'processing'
--   outbox.state one of the five       literals in src/outbox.c, src/dispatcher.c,
--                                      src/deadletters.c
-- test/sql/integrity_rules.sql shows each rule still holds.
ALTER TABLE idemgate.runs DROP CONSTRAINT IF EXISTS runs_idempotency_key_check;
ALTER TABLE idemgate.runs DROP CONSTRAINT IF EXISTS runs_state_check;
ALTER TABLE idemgate.outbox DROP CONSTRAINT IF EXISTS outbox_state_check;
COMMENT ON COLUMN idemgate.runs.state IS
'processing, awaiting_human, approved, completed, failed_retryable or failed_terminal (kept by the C code, see test/sql/integrity_rules.sql)';
COMMENT ON COLUMN idemgate.outbox.state IS
'pending, sending, completed, unknown, failed or cancelled (kept by the C code, see test/sql/integrity_rules.sql)';

-- 2. The silence alert asks for the last run of each watched workflow. A
-- run without a workflow can never be watched, so it is left out of the
-- index: claims without a workflow pay no second index insert.
DROP INDEX IF EXISTS idemgate.runs_workflow_created_idx;
CREATE INDEX runs_workflow_created_idx ON idemgate.runs (workflow, created_at)
    WHERE workflow IS NOT NULL;

-- 3. The partial indexes the claim and the settle step walk get one entry
-- per state change, and the entries of effects that moved on stay until
-- vacuum. A plain index scan marks them dead on its first visit
-- (kill_prior_tuple) so later scans skip them, but not inside a
-- deduplicated posting list (one index tuple for many rows with the same
-- key: a backlog enqueued in one transaction shares next_attempt_at), which
-- every claim then walked again, heap visit by heap visit (bench/dispatch:
-- 352 µs of dispatcher CPU per effect for such a backlog, 189 µs
-- otherwise). So no deduplication on these two.
ALTER INDEX idemgate.outbox_due_idx SET (deduplicate_items = off);
ALTER INDEX idemgate.outbox_sending_idx SET (deduplicate_items = off);
REINDEX INDEX idemgate.outbox_due_idx;
REINDEX INDEX idemgate.outbox_sending_idx;

-- 4. A delivery and the completion of a run by its effects are recorded by
-- the rows themselves, as a first claim already is (1.0): a completed
-- effect keeps its provider id, HTTP status, attempts and time
-- (updated_at), a completed run its version and time, and neither ever
-- changes again. The two event rows each effect used to add (half of the
-- bytes of a run and a third of the dispatcher's work per effect) are no
-- longer written; key_history shows the same entries as before, from the
-- rows, and gets the effect_id an entry is about.
CREATE OR REPLACE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key)) AS details,
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
COMMENT ON VIEW idemgate.key_history IS
'Everything that happened to each key: its first claim (from runs), every event, each delivered effect (from outbox) and the completion of a run by its effects (from runs), for "did we process this key?" and "did we send?"';

-- 5. Retention reads only what it deletes (src/retention.c): purge also
-- asks created_at < bound (implied by updated_at < bound), and this BRIN
-- index finds those runs in the old page ranges without reading the recent
-- ones. autosummarize summarises each filled range as it is left behind.
CREATE INDEX runs_created_brin ON idemgate.runs USING brin (created_at)
    WITH (autosummarize = on);

-- 6. The foreign keys of outbox and approvals to runs go, for the reason
-- the CHECK constraints went (1.): every writer is our C code, and a
-- foreign key costs a trigger per row. Deleting a run fired two cascade
-- triggers, each a query, although purge deletes the children itself
-- first: 90% of purging 200,000 runs (13.7 of 15 s). Inserting a child
-- ran a key-share check of its run. The rule the keys kept, "every effect
-- and approval has its run", is kept so:
--   insert  effects (InsertEffects) and approvals (request_approval) are
--           only inserted for a run this transaction holds locked FOR UPDATE;
--   delete  runs are deleted only by purge, which deletes their approvals,
--           effects, dead letters and events in the same statement; no
--           bundle grants DELETE on runs.
-- test/sql/integrity_rules.sql shows both.
ALTER TABLE idemgate.outbox DROP CONSTRAINT IF EXISTS outbox_idempotency_key_fkey;
ALTER TABLE idemgate.approvals DROP CONSTRAINT IF EXISTS approvals_idempotency_key_fkey;

-- 5. A duplicate claim writes an event row; of its four index entries, the
-- one in events_claim_workflow_idx is only ever looked up by workflow (the
-- silence alert: details->>'workflow' = the watched workflow, which implies
-- it is not null, so the planner still proves this predicate). Claims
-- without a workflow no longer put a NULL entry there: one index insert
-- and ~70 bytes of WAL less per such duplicate (bench/claim).
DROP INDEX idemgate.events_claim_workflow_idx;
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate')
      AND (details OPERATOR(pg_catalog.->>) 'workflow') IS NOT NULL;
