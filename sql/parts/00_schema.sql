\echo Use "CREATE EXTENSION idemgate" to load this file. \quit

CREATE SCHEMA idemgate;
COMMENT ON SCHEMA idemgate IS 'idemgate: idempotency, leases, approvals, outbox, dead letters';

-- idemgate 1.0 — tables. Functions live in the later parts, one per concern.
-- Nothing here is readable or writable by PUBLIC: every access goes through
-- SECURITY DEFINER functions whose search_path is pinned, and rights come in
-- bundles granted with idemgate.grant_role().

-- Runs: the idempotency ledger, one row per business event.
CREATE TABLE idemgate.runs (
    idempotency_key  text PRIMARY KEY
                     CHECK (pg_catalog.octet_length(idempotency_key) BETWEEN 1 AND 512),
    workflow         text,
    state            text NOT NULL CHECK (state IN ('processing', 'awaiting_human', 'approved',
                                                    'completed', 'failed_retryable', 'failed_terminal')),
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
COMMENT ON TABLE idemgate.runs IS 'Idempotency ledger: one row per business event key, with its lease, state and result';
COMMENT ON COLUMN idemgate.runs.lease_started_at IS 'When the current owner took the lease; renewals never extend past this plus idemgate.max_lease_life';
COMMENT ON COLUMN idemgate.runs.failures IS 'How many times the run has failed (idemgate.fail); compared with idemgate.max_run_attempts';

-- Events: the audit trail. One row per state change and operator action.
-- Raw payloads and tokens are never copied here.
CREATE TABLE idemgate.events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT pg_catalog.now(),
    idempotency_key text,
    effect_id       uuid,
    kind            text NOT NULL,
    actor           text,
    details         jsonb
);
CREATE INDEX events_key_idx ON idemgate.events (idempotency_key);
CREATE INDEX events_kind_at_idx ON idemgate.events (kind, at);
COMMENT ON TABLE idemgate.events IS 'Audit trail: one row per claim outcome, state change and operator action (no raw payloads or tokens)';

-- Dead letters: where a failure waits for a person.
CREATE TABLE idemgate.dead_letters (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('run', 'effect')),
    idempotency_key text NOT NULL,
    effect_id       uuid,
    effect_type     text,
    payload         jsonb,
    error_class     text,
    error           text,
    attempts        integer NOT NULL DEFAULT 0,
    dead_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    reinjected_at   timestamptz,
    reinjected_by   text
);
CREATE INDEX dead_letters_open_idx ON idemgate.dead_letters (dead_at) WHERE reinjected_at IS NULL;
COMMENT ON TABLE idemgate.dead_letters IS 'Failures that exhausted their retries, with the full input, the error and the attempt count; reinject with idemgate.reinject';

-- Approvals: single-use human decisions. Only the SHA-256 of the token is kept.
CREATE TABLE idemgate.approvals (
    approval_id       uuid PRIMARY KEY,
    idempotency_key   text NOT NULL REFERENCES idemgate.runs (idempotency_key) ON DELETE CASCADE,
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
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX approvals_key_idx ON idemgate.approvals (idempotency_key);
CREATE INDEX approvals_pending_idx ON idemgate.approvals (expires_at) WHERE consumed_at IS NULL;
COMMENT ON TABLE idemgate.approvals IS 'Single-use approval challenges; the raw token is never stored, only its SHA-256';

-- Outbox: effects recorded in the same transaction as the decision.
CREATE TABLE idemgate.outbox (
    effect_id        uuid PRIMARY KEY,
    idempotency_key  text NOT NULL REFERENCES idemgate.runs (idempotency_key) ON DELETE CASCADE,
    effect_type      text NOT NULL,
    target           text NOT NULL,
    payload          jsonb NOT NULL,
    state            text NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'sending', 'completed', 'unknown', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    lease_owner      uuid,
    lease_expires_at timestamptz,
    provider_id      text,
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    UNIQUE (idempotency_key, effect_type, target)
);
CREATE INDEX outbox_due_idx ON idemgate.outbox (effect_type, next_attempt_at) WHERE state = 'pending';
CREATE INDEX outbox_sending_idx ON idemgate.outbox (lease_expires_at) WHERE state = 'sending';
COMMENT ON TABLE idemgate.outbox IS 'Transactional outbox: external effects waiting to be sent, being sent, or settled';

-- Endpoints: where each effect type is delivered. Headers may hold secrets,
-- so no bundle but operator can read this table.
CREATE TABLE idemgate.endpoints (
    effect_type            text PRIMARY KEY,
    url                    text NOT NULL,
    timeout                interval NOT NULL DEFAULT '10 seconds',
    max_attempts           integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 100),
    honors_idempotency_key boolean NOT NULL DEFAULT false,
    headers                jsonb NOT NULL DEFAULT '{}',
    provider_id_field      text NOT NULL DEFAULT 'id',
    created_at             timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at             timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE idemgate.endpoints IS 'Registered HTTP endpoints per effect type; effects are only ever sent to these URLs';

-- Control: the audited kill switch (a single row).
CREATE TABLE idemgate.control (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    actions_enabled boolean NOT NULL DEFAULT true,
    changed_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    changed_by      text,
    reason          text
);
INSERT INTO idemgate.control (singleton) VALUES (true);
COMMENT ON TABLE idemgate.control IS 'Kill switch state; change it with idemgate.set_actions_enabled';

-- Watched workflows: silence alerts.
CREATE TABLE idemgate.watched_workflows (
    workflow          text PRIMARY KEY,
    expected_interval interval NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE idemgate.watched_workflows IS 'Workflows expected to be claimed at least every expected_interval (silence alert at twice that)';

-- Privilege bundles: which function or relation each bundle may use.
-- grant_role/revoke_role read this table; each feature's SQL part adds its rows.
-- fn is the signature as text, not regprocedure: pg_upgrade refuses user
-- columns of reg* types other than regclass, regrole and regtype. The trigger
-- checks it names an existing function and stores regprocedure's output with
-- search_path = pg_catalog, pg_temp, so it is always the schema-qualified
-- canonical form (what p.oid::regprocedure::text prints).
CREATE TABLE idemgate.bundle_members (
    bundle   text NOT NULL CHECK (bundle IN ('client', 'approver', 'operator', 'reader')),
    fn       text,
    rel      regclass,
    CHECK ((fn IS NULL) <> (rel IS NULL))
);
COMMENT ON TABLE idemgate.bundle_members IS 'What each privilege bundle may execute or read; used by grant_role and revoke_role';
CREATE FUNCTION idemgate.bundle_members_canonical() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_bundle_members_canonical';
COMMENT ON FUNCTION idemgate.bundle_members_canonical() IS
'Trigger: bundle_members.fn must name an existing function and is stored as its schema-qualified regprocedure text';
CREATE TRIGGER bundle_members_canonical BEFORE INSERT OR UPDATE OF fn ON idemgate.bundle_members
FOR EACH ROW EXECUTE FUNCTION idemgate.bundle_members_canonical();
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.bundle_members_canonical()');

SELECT pg_catalog.pg_extension_config_dump('idemgate.runs', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.events', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.dead_letters', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.approvals', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.outbox', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.endpoints', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.watched_workflows', '');
-- The identity sequences too, or a restored database would reuse event and
-- dead letter ids already present in the restored rows.
SELECT pg_catalog.pg_extension_config_dump('idemgate.events_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('idemgate.dead_letters_id_seq', '');

REVOKE ALL ON ALL TABLES IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON SCHEMA idemgate FROM PUBLIC;
