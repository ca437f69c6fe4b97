-- sql/tables/outbox.sql — effects recorded in the same transaction as the
-- decision that made them (src/outbox/outbox.c), sent by the dispatcher.
--
-- state is pending, sending, completed, unknown, failed or cancelled, kept
-- by the C code rather than a CHECK constraint, and there is no foreign key
-- to runs, for the reasons given in sql/tables/runs.sql and
-- sql/tables/approvals.sql: effects are only inserted for a run their
-- transaction holds locked FOR UPDATE (InsertEffects), and purge deletes a
-- run's effects with the run (test/sql/integrity_rules.sql).
CREATE TABLE idemgate.outbox (
    effect_id        uuid PRIMARY KEY,
    idempotency_key  text NOT NULL,
    effect_type      text NOT NULL,
    target           text NOT NULL,
    payload          jsonb NOT NULL,
    state            text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    lease_owner      uuid,
    lease_expires_at timestamptz,
    provider_id      text,
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- An automatic effect of a type with a cancel_window is not due before
    -- cancel_until (its not_before); until then an approver may cancel it.
    cancel_until     timestamptz,
    UNIQUE (idempotency_key, effect_type, target)
);

-- Added after the table, as the update to 1.3 added them: status_checks'
-- constant default stays its "missing value", which pg_dump
-- --binary-upgrade shows (see sql/tables/runs.sql). replaces names the
-- rejected effect a corrected one replaces (reinject with a payload: a new
-- effect_id, so a new Idempotency-Key; src/operations/reinject.c).
ALTER TABLE idemgate.outbox
    ADD COLUMN status_checks integer NOT NULL DEFAULT 0,
    ADD COLUMN replaces uuid;

-- The dispatcher's claim and lease scans. They get one entry per state
-- change, and a plain index scan marks the entries of effects that moved on
-- dead on its first visit (kill_prior_tuple), but not inside a deduplicated
-- posting list (a backlog enqueued in one transaction shares
-- next_attempt_at), which every claim then walked again, heap visit by heap
-- visit (bench/dispatch: 352 µs of dispatcher CPU per effect for such a
-- backlog, 189 µs otherwise). So no deduplication on these two.
CREATE INDEX outbox_due_idx ON idemgate.outbox (effect_type, next_attempt_at)
    WITH (deduplicate_items = off) WHERE state = 'pending';
CREATE INDEX outbox_sending_idx ON idemgate.outbox (lease_expires_at)
    WITH (deduplicate_items = off) WHERE state = 'sending';
CREATE INDEX outbox_unknown_idx ON idemgate.outbox (effect_type, updated_at) WHERE state = 'unknown';

COMMENT ON TABLE idemgate.outbox IS 'Transactional outbox: external effects waiting to be sent, being sent, or settled';
COMMENT ON COLUMN idemgate.outbox.state IS
'pending, sending, completed, unknown, failed or cancelled (kept by the C code, see test/sql/integrity_rules.sql)';
COMMENT ON COLUMN idemgate.outbox.cancel_until IS
'End of the cancel window of an automatic effect whose type has a cancel_window (it is not due before then); an approver may cancel it with cancel_in_window until then. NULL otherwise';
COMMENT ON COLUMN idemgate.outbox.status_checks IS
'Status look-ups of this unknown effect that left it unknown (the next waits 10 s × 2^status_checks, at most an hour)';
COMMENT ON COLUMN idemgate.outbox.replaces IS
'The effect_id of the rejected effect this one replaces with a corrected payload (reinject with a payload); NULL otherwise';

SELECT pg_catalog.pg_extension_config_dump('idemgate.outbox', '');
REVOKE ALL ON idemgate.outbox FROM PUBLIC;
