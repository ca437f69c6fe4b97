-- sql/tables/approvals.sql — single-use human decisions
-- (src/approvals/approvals.c). Only the SHA-256 of the token is kept.
--
-- No foreign key to runs, for the reason the runs' CHECK constraints went
-- (sql/tables/runs.sql): every writer is our C code, and a foreign key
-- costs a trigger per row. "Every approval has its run" is kept so: an
-- approval is only inserted for a run its transaction holds locked FOR
-- UPDATE (request_approval), and runs are deleted only by purge, which
-- deletes their approvals in the same statement (test/sql/integrity_rules.sql).
CREATE TABLE idemgate.approvals (
    approval_id       uuid PRIMARY KEY,
    idempotency_key   text NOT NULL,
    token_hash        bytea NOT NULL UNIQUE CHECK (pg_catalog.octet_length(token_hash) = 32),
    allowed_decisions text[] NOT NULL,
    audience          text[],
    requested_by      text,
    expires_at        timestamptz NOT NULL,
    consumed_at       timestamptz,
    decision          text,
    approver_subject  text,
    card              jsonb,
    effects           jsonb NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- The run version the approval put in awaiting_human: the approval can
    -- only be decided while the run is still awaiting_human at exactly
    -- this version.
    run_version       bigint NOT NULL
);
CREATE INDEX approvals_key_idx ON idemgate.approvals (idempotency_key);
CREATE INDEX approvals_pending_idx ON idemgate.approvals (expires_at) WHERE consumed_at IS NULL;

COMMENT ON TABLE idemgate.approvals IS 'Single-use approval challenges; the raw token is never stored, only its SHA-256';
COMMENT ON COLUMN idemgate.approvals.token_hash IS
'SHA-256 of the raw token (idemgate.hash_token); the token itself is returned once by request_approval and never stored';
COMMENT ON COLUMN idemgate.approvals.run_version IS
'Version of the run when this approval moved it to awaiting_human; the approval is only valid while the run is still at that version';

SELECT pg_catalog.pg_extension_config_dump('idemgate.approvals', '');
REVOKE ALL ON idemgate.approvals FROM PUBLIC;
