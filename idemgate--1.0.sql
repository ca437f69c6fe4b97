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

-- Runs: the idempotency ledger (src/runs.c).

CREATE FUNCTION idemgate.claim(key text, payload jsonb, lease interval DEFAULT '5 minutes',
                               workflow text DEFAULT NULL, owner uuid DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim';
COMMENT ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid) IS
'Atomically claim an idempotency key: claimed (new key), recovered (retryable or expired lease taken over) or duplicate (earlier state and result); IG001 when the payload differs';

CREATE FUNCTION idemgate.claim(request jsonb)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_request';
COMMENT ON FUNCTION idemgate.claim(jsonb) IS
'claim() with its arguments in one JSON object {key, payload, lease, workflow, owner}: the robust form for n8n''s Postgres node';

CREATE FUNCTION idemgate.claim_lease(key text, payload_hash bytea, owner uuid, lease interval)
RETURNS TABLE(idempotency_key text, lease_owner uuid, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_lease';
COMMENT ON FUNCTION idemgate.claim_lease(text, bytea, uuid, interval) IS
'The single atomic claim statement: one row when claimed or recovered, none when the key is busy or finished';

CREATE FUNCTION idemgate.hash_payload(payload jsonb) RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_hash_payload';
COMMENT ON FUNCTION idemgate.hash_payload(jsonb) IS
'SHA-256 of the payload''s canonical jsonb text; equals sha256(convert_to(payload::text, ''UTF8''))';

CREATE FUNCTION idemgate.cas_transition(key text, owner uuid, version bigint, new_state text,
                                        result jsonb DEFAULT NULL) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cas_transition';
COMMENT ON FUNCTION idemgate.cas_transition(text, uuid, bigint, text, jsonb) IS
'Compare-and-set a run''s state as its live lease owner; returns the new version, NULL when ownership was lost, IG002 for an illegal transition';

CREATE FUNCTION idemgate.renew_lease(key text, owner uuid, version bigint, extend_by interval)
RETURNS timestamptz
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_renew_lease';
COMMENT ON FUNCTION idemgate.renew_lease(text, uuid, bigint, interval) IS
'Extend a live lease to now() + extend_by; NULL when not the owner or past idemgate.max_lease_life';

CREATE FUNCTION idemgate.fail(key text, owner uuid, version bigint, error_class text, error text,
                              retryable boolean) RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail';
COMMENT ON FUNCTION idemgate.fail(text, uuid, bigint, text, text, boolean) IS
'Record a failure as the live owner: failed_retryable, or failed_terminal plus a dead letter once idemgate.max_run_attempts is reached or when not retryable';

CREATE FUNCTION idemgate.supersede(original_key text, new_key text, payload jsonb, operator text,
                                   reason text, lease interval DEFAULT '5 minutes')
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_supersede';
COMMENT ON FUNCTION idemgate.supersede(text, text, jsonb, text, text, interval) IS
'Replay a finished run under a new key linked to the original, recording operator and reason; the original is never modified';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.claim(text,jsonb,interval,text,uuid)'),
    ('client', 'idemgate.claim(jsonb)'),
    ('client', 'idemgate.claim_lease(text,bytea,uuid,interval)'),
    ('client', 'idemgate.hash_payload(jsonb)'),
    ('client', 'idemgate.cas_transition(text,uuid,bigint,text,jsonb)'),
    ('client', 'idemgate.renew_lease(text,uuid,bigint,interval)'),
    ('client', 'idemgate.fail(text,uuid,bigint,text,text,boolean)'),
    ('operator', 'idemgate.supersede(text,text,jsonb,text,text,interval)');

-- A first claim is recorded by the run row itself (see src/runs.c); this
-- view shows it together with the events as one timeline per key.
CREATE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key)) AS details
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL;
COMMENT ON VIEW idemgate.key_history IS
'Everything that happened to each key: its first claim (from runs) and every event, for "did we process this key?"';
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES ('reader', 'idemgate.key_history');

-- Effects and the automatic path (src/effects.c).

CREATE FUNCTION idemgate.enqueue_effect(key text, owner uuid, version bigint, effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect';
COMMENT ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) IS
'The automatic path: as the live owner of a processing run, insert its effects into the outbox and approve the run in one step; effect ids (existing ones for an already enqueued (key, type, target)) and the new version, or a row of NULLs when ownership was lost';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.enqueue_effect(text,uuid,bigint,jsonb)');

-- Approvals: single-use hashed tokens (src/approvals.c).

-- The run version the approval put in awaiting_human: the approval can only
-- be decided while the run is still awaiting_human at exactly this version.
ALTER TABLE idemgate.approvals ADD COLUMN run_version bigint NOT NULL;
COMMENT ON COLUMN idemgate.approvals.run_version IS
'Version of the run when this approval moved it to awaiting_human; the approval is only valid while the run is still at that version';
COMMENT ON COLUMN idemgate.approvals.token_hash IS
'SHA-256 of the raw token (idemgate.hash_token); the token itself is returned once by request_approval and never stored';

CREATE FUNCTION idemgate.request_approval(key text, owner uuid, version bigint, effects jsonb,
                                          expires_in interval DEFAULT '24 hours',
                                          card jsonb DEFAULT NULL, audience text[] DEFAULT NULL,
                                          requested_by text DEFAULT NULL)
RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_request_approval';
COMMENT ON FUNCTION idemgate.request_approval(text, uuid, bigint, jsonb, interval, jsonb, text[], text) IS
'As the live owner of a processing run, move it to awaiting_human and create a single-use approval for its effects; returns the raw token once (only its SHA-256 is stored), or a row of NULLs when ownership was lost';

CREATE FUNCTION idemgate.hash_token(token text) RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_hash_token';
COMMENT ON FUNCTION idemgate.hash_token(text) IS
'SHA-256 of an approval token''s bytes: what idemgate.approvals.token_hash holds';

CREATE FUNCTION idemgate.peek_approval(token text)
RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
              expires_at timestamptz, card jsonb, effects jsonb)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_peek_approval';
COMMENT ON FUNCTION idemgate.peek_approval(text) IS
'For the GET confirmation page: the approval''s card, effects and status (pending, consumed or expired); changes nothing; no row for an unknown token';

CREATE FUNCTION idemgate.consume_approval(token text, decision text, approver text,
                                          reason text DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_consume_approval';
COMMENT ON FUNCTION idemgate.consume_approval(text, text, text, text) IS
'Decide an approval as the authenticated approver, in one transaction: approved (run approved, effects in the outbox), rejected (run failed_terminal, nothing enqueued) or invalid (nothing changed; never says why)';

CREATE FUNCTION idemgate.expire_approvals() RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_expire_approvals';
COMMENT ON FUNCTION idemgate.expire_approvals() IS
'Fail every run still waiting on an approval past its expiry: failed_terminal, dead letter (approval_expired) and event; returns how many';

-- What operators and readers may see of approvals: no token hashes, no
-- cards or effects (they may hold customer data).
CREATE VIEW idemgate.approval_status AS
SELECT a.approval_id, a.idempotency_key,
       CASE WHEN a.consumed_at IS NOT NULL THEN 'consumed'
            WHEN a.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now() THEN 'expired'
            WHEN EXISTS (SELECT 1 FROM idemgate.runs r
                         WHERE r.idempotency_key OPERATOR(pg_catalog.=) a.idempotency_key
                           AND r.state OPERATOR(pg_catalog.=) 'awaiting_human'
                           AND r.version OPERATOR(pg_catalog.=) a.run_version)
            THEN 'pending'
            ELSE 'expired' END AS status,
       a.allowed_decisions, a.audience, a.requested_by, a.expires_at, a.consumed_at,
       a.decision, a.approver_subject, a.created_at
FROM idemgate.approvals a;
COMMENT ON VIEW idemgate.approval_status IS
'Approvals without their token hashes, cards or effects: who asked, who decided, what and when';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.request_approval(text,uuid,bigint,jsonb,interval,jsonb,text[],text)'),
    ('client', 'idemgate.hash_token(text)'),
    ('approver', 'idemgate.hash_token(text)'),
    ('approver', 'idemgate.peek_approval(text)'),
    ('approver', 'idemgate.consume_approval(text,text,text,text)'),
    ('operator', 'idemgate.expire_approvals()');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.approval_status');

-- Outbox pull API (src/outbox.c): external workers (an n8n schedule, a
-- script) claim due effects, send them with their own nodes, and record the
-- outcome. The dispatcher records outcomes through the same C code.

CREATE FUNCTION idemgate.claim_effects(effect_type text, batch integer DEFAULT 10,
                                       lease interval DEFAULT '1 minute')
RETURNS TABLE(effect_id uuid, idempotency_key text, effect_type text, target text,
              payload jsonb, attempt integer, lease_owner uuid)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 10 AS 'MODULE_PATHNAME', 'idemgate_claim_effects';
COMMENT ON FUNCTION idemgate.claim_effects(text, integer, interval) IS
'Claim up to batch due pending effects of approved runs (FOR UPDATE SKIP LOCKED), marking them sending under one fresh lease owner; settles expired leases of the type first; returns nothing while the kill switch is off';

CREATE FUNCTION idemgate.complete_effect(effect_id uuid, owner uuid, provider_id text DEFAULT NULL,
                                         status integer DEFAULT NULL)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_complete_effect';
COMMENT ON FUNCTION idemgate.complete_effect(uuid, uuid, text, integer) IS
'Mark a sending effect completed if owner still holds its lease (provider id and HTTP status stored); completes the run with its last effect; false when the lease was lost';

CREATE FUNCTION idemgate.fail_effect(effect_id uuid, owner uuid, error_class text,
                                     error text DEFAULT NULL, retry_after interval DEFAULT NULL,
                                     status integer DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_effect';
COMMENT ON FUNCTION idemgate.fail_effect(uuid, uuid, text, text, interval, integer) IS
'Record a failed attempt of a sending effect: pending with backoff (transport, rate_limited, unavailable), unknown (timeout_after_send, server_error; retryable when the endpoint honours the key), failed + dead letter (rejected, or attempts exhausted); NULL when the lease was lost';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.claim_effects(text,integer,interval)'),
    ('client', 'idemgate.complete_effect(uuid,uuid,text,integer)'),
    ('client', 'idemgate.fail_effect(uuid,uuid,text,text,interval,integer)');

-- Dead letters and reinjection (src/deadletters.c).

-- An effect's dead letter also keeps its target, so the full effect
-- (type, target, payload) survives even if the outbox row is purged.
ALTER TABLE idemgate.dead_letters ADD COLUMN target text;
COMMENT ON COLUMN idemgate.dead_letters.target IS 'For effect dead letters: the effect''s target (payload holds the effect''s payload)';

CREATE FUNCTION idemgate.reinject(id bigint, actor text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject';
COMMENT ON FUNCTION idemgate.reinject(bigint, text) IS
'Reinject a dead letter once: an effect goes back to pending (attempts reset, same effect_id and key), a run to failed_retryable; false when already reinjected, IG003 for an unknown id';

CREATE FUNCTION idemgate.reinject_all(actor text, effect_type text DEFAULT NULL,
                                      since timestamptz DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject_all';
COMMENT ON FUNCTION idemgate.reinject_all(text, text, timestamptz) IS
'Reinject every open dead letter (only effects of effect_type when given, only those dead since since when given); returns how many';

CREATE FUNCTION idemgate.resolve_effect(effect_id uuid, delivered boolean, actor text,
                                        provider_id text DEFAULT NULL, note text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resolve_effect';
COMMENT ON FUNCTION idemgate.resolve_effect(uuid, boolean, text, text, text) IS
'Settle an unknown effect after checking with the provider: delivered → completed, not delivered → pending (sent again); IG002 unless unknown';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.reinject(bigint,text)'),
    ('operator', 'idemgate.reinject_all(text,text,timestamptz)'),
    ('operator', 'idemgate.resolve_effect(uuid,boolean,text,text,text)');

-- Kill switch (src/killswitch.c): sends happen only when both the audited
-- switch and the setting idemgate.actions_enabled are on.

CREATE FUNCTION idemgate.set_actions_enabled(enabled boolean, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_actions_enabled';
COMMENT ON FUNCTION idemgate.set_actions_enabled(boolean, text, text) IS
'Turn external sends on or off (kill switch), recording actor and reason; queued effects are held, not lost';

CREATE FUNCTION idemgate.actions_enabled() RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_actions_enabled';
COMMENT ON FUNCTION idemgate.actions_enabled() IS
'True when external sends may happen: the kill switch and the setting idemgate.actions_enabled are both on';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.set_actions_enabled(boolean,text,text)'),
    ('client', 'idemgate.actions_enabled()'),
    ('reader', 'idemgate.actions_enabled()');

-- pg_dump keeps the switch: the control row is dumped, and restoring it
-- updates the row CREATE EXTENSION made instead of adding a second one.
CREATE FUNCTION idemgate.control_restore() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_control_restore';
COMMENT ON FUNCTION idemgate.control_restore() IS
'Trigger: a restored kill switch row (pg_dump) updates the existing row instead of duplicating it';
CREATE TRIGGER control_restore BEFORE INSERT ON idemgate.control
FOR EACH ROW EXECUTE FUNCTION idemgate.control_restore();
SELECT pg_catalog.pg_extension_config_dump('idemgate.control', '');

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.control_restore()');

-- Endpoints (src/endpoints.c): where the dispatcher delivers each effect
-- type. Headers can hold secrets: only the operator bundle may read the table.

CREATE FUNCTION idemgate.register_endpoint(effect_type text, url text,
                                           timeout interval DEFAULT '10 seconds',
                                           max_attempts integer DEFAULT 3,
                                           honors_idempotency_key boolean DEFAULT false,
                                           headers jsonb DEFAULT '{}',
                                           provider_id_field text DEFAULT 'id')
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_register_endpoint';
COMMENT ON FUNCTION idemgate.register_endpoint(text, text, interval, integer, boolean, jsonb, text) IS
'Create or replace the HTTP endpoint of an effect type: https, or http only to hosts in idemgate.allowed_http_hosts; extra headers may not override Content-Type, Idempotency-Key, Host or Content-Length';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.register_endpoint(text,text,interval,integer,boolean,jsonb,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.endpoints');

-- Validating model output (SPEC §2), implemented in src/validate.c.
-- Pure computation: touches no table, so no SECURITY DEFINER.
CREATE FUNCTION idemgate.validate(output jsonb, schema jsonb)
RETURNS TABLE (valid boolean, errors jsonb)
AS 'MODULE_PATHNAME', 'idemgate_validate'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION idemgate.validate(jsonb, jsonb) IS
'Check output against a JSON Schema subset (type, properties, required, additionalProperties, enum, const, minLength, maxLength, minimum, maximum, items, minItems, maxItems, pattern); one row: valid, and errors as [{"path": "$.field", "error": "..."}]. Unsupported or malformed schema keywords raise 22023.';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES ('client', 'idemgate.validate(jsonb,jsonb)');

-- Recording validations of model output (src/validation_log.c).

ALTER TABLE idemgate.runs ADD COLUMN validations integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN idemgate.runs.validations IS
'How many times record_validation checked this run''s model output (the attempt number of bounded repair)';

CREATE FUNCTION idemgate.record_validation(key text, owner uuid, version bigint, output jsonb, schema jsonb)
RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_record_validation';
COMMENT ON FUNCTION idemgate.record_validation(text, uuid, bigint, jsonb, jsonb) IS
'validate() as the run''s live owner, counted for the metrics: one row (valid, errors, attempt = validations of this run so far); a row of NULLs, counting nothing, when ownership was lost. The event keeps the verdict and error count, never the output';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)');

-- Metrics (src/metrics.c): the weekly figures, counted from the audit trail.

CREATE FUNCTION idemgate.metrics(since timestamptz DEFAULT pg_catalog.now() - interval '7 days')
RETURNS TABLE(claims bigint, duplicates bigint, duplicate_rate double precision,
              recovered bigint, approvals_decided bigint,
              approval_wait_p50 interval, approval_wait_p95 interval,
              validations bigint, validation_failure_rate double precision,
              auto_approved bigint, human_approved bigint, retries bigint,
              retry_exhausted bigint, unknown_effects bigint, dead_letters_open bigint,
              oldest_dead_letter_age interval, actions_enabled boolean)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_metrics';
COMMENT ON FUNCTION idemgate.metrics(timestamptz) IS
'One row of figures over [since, now()] (claims, duplicates and their rate, recoveries, approvals and their wait p50/p95, validations and their failure rate, automatic versus human approvals, retries, retry exhaustion) plus the current backlog (unknown effects, open dead letters, oldest dead letter age, kill switch). Rates are NULL when nothing was counted';

CREATE FUNCTION idemgate.prometheus() RETURNS text
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_prometheus';
COMMENT ON FUNCTION idemgate.prometheus() IS
'metrics() over the last 7 days in the Prometheus text exposition format: gauges named idemgate_*, windowed ones labelled window="7d"';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('reader', 'idemgate.metrics(timestamptz)'),
    ('reader', 'idemgate.prometheus()');

-- Alerts (src/alerts.c): aggregates that name the business event, never one
-- row per failure. idemgate.alerts is the contract; idemgate.alert_instances
-- adds the subject (effect type or workflow) that identifies each alert, so
-- publish_alerts can notify once per transition.

-- The silence check asks, every second, for the last claim of each watched
-- workflow: its last new run (a first claim is recorded by the run row) and
-- its last recovered or duplicate claim event. These indexes keep both
-- index probes.
CREATE INDEX runs_workflow_created_idx ON idemgate.runs (workflow, created_at);
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('claimed', 'recovered', 'duplicate');
CREATE INDEX outbox_unknown_idx ON idemgate.outbox (effect_type, updated_at) WHERE state = 'unknown';

CREATE TABLE idemgate.alert_state (
    alert      text NOT NULL,
    subject    text NOT NULL,
    severity   text NOT NULL,
    message    text NOT NULL,
    count      bigint NOT NULL,
    since      timestamptz,
    fired_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (alert, subject)
);
COMMENT ON TABLE idemgate.alert_state IS
'Alerts that publish_alerts last announced as firing; a NOTIFY is sent only when this set changes';
SELECT pg_catalog.pg_extension_config_dump('idemgate.alert_state', '');

-- since is shown as HH24:MI in the session's time zone (the server's for the
-- dispatcher), with the date when it is more than a day old.
CREATE VIEW idemgate.alert_instances AS
WITH settings AS (
    SELECT COALESCE(NULLIF(pg_catalog.current_setting('idemgate.alert_failures', true), '')::bigint,
                    10) AS max_failures
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
    SELECT w.workflow, w.expected_interval,
           GREATEST(w.created_at,
                    (SELECT pg_catalog.max(r.created_at) FROM idemgate.runs r
                      WHERE r.workflow = w.workflow),
                    (SELECT pg_catalog.max(e.at) FROM idemgate.events e
                      WHERE e.kind IN ('claimed', 'recovered', 'duplicate')
                        AND (e.details OPERATOR(pg_catalog.->>) 'workflow') = w.workflow)) AS last_seen,
           pg_catalog.date_part('epoch', w.expected_interval)::bigint AS secs
      FROM idemgate.watched_workflows w
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
           END AS text, ''::text AS suffix, f.n AS count, f.since
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
           d.n, d.since
      FROM dead d
    UNION ALL
    SELECT 'unknown_effects', 'effect_type:' || u.grp, 'warning',
           u.n::text || CASE WHEN u.n = 1 THEN ' effect' ELSE ' effects' END
             || ' of type ' || u.grp || ' in doubt',
           ' (maybe delivered: check with the provider, then resolve_effect)',
           u.n, u.since
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
           w.last_seen
      FROM watched w
     WHERE pg_catalog.now() - w.last_seen > w.expected_interval * 2
)
SELECT r.alert, r.subject, r.severity,
       r.text || ' since '
         || pg_catalog.to_char(r.since, CASE WHEN r.since < pg_catalog.now() - interval '1 day'
                                             THEN 'YYYY-MM-DD HH24:MI' ELSE 'HH24:MI' END)
         || r.suffix AS message,
       r.count, r.since
  FROM raised r;
COMMENT ON VIEW idemgate.alert_instances IS
'idemgate.alerts plus the subject (effect type or workflow) that identifies each alert; read by publish_alerts';

CREATE VIEW idemgate.alerts AS
SELECT alert, severity, message, count, since FROM idemgate.alert_instances;
COMMENT ON VIEW idemgate.alerts IS
'Alerts firing now, one row per alert and effect type or workflow: failure_rate (more than idemgate.alert_failures undelivered effects or failed runs of one type/workflow in 10 minutes), dead_letters (open, older than 1 hour), unknown_effects, silence (a watched workflow not claimed for twice its interval)';

CREATE FUNCTION idemgate.watch_workflow(name text, expected_interval interval) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_watch_workflow';
COMMENT ON FUNCTION idemgate.watch_workflow(text, interval) IS
'Watch a workflow for silence (upsert): the silence alert fires when it has not been claimed for more than twice expected_interval';

CREATE FUNCTION idemgate.unwatch_workflow(name text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_unwatch_workflow';
COMMENT ON FUNCTION idemgate.unwatch_workflow(text) IS
'Stop watching a workflow for silence; false when it was not watched';

CREATE FUNCTION idemgate.publish_alerts() RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_publish_alerts';
COMMENT ON FUNCTION idemgate.publish_alerts() IS
'Compare the alerts firing now with those last published and NOTIFY idemgate_alerts once per transition (state firing or cleared); returns the number of notifications. The dispatcher calls it about every second';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.watch_workflow(text,interval)'),
    ('operator', 'idemgate.unwatch_workflow(text)'),
    ('operator', 'idemgate.publish_alerts()');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.alerts');

-- Retention (src/retention.c): finished work is purged, open dead letters stay
-- until an operator purges them.

CREATE FUNCTION idemgate.purge(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge';
COMMENT ON FUNCTION idemgate.purge(interval) IS
'Delete completed and failed_terminal runs last changed more than older_than ago, with their approvals, effects, reinjected dead letters and events; runs with an open dead letter or an unsettled effect are kept. Returns the number of runs deleted';

CREATE FUNCTION idemgate.purge_dead_letters(older_than interval) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_purge_dead_letters';
COMMENT ON FUNCTION idemgate.purge_dead_letters(interval) IS
'Delete dead letters (open or reinjected) that died more than older_than ago, with the full payloads they hold; their runs become purgeable. Returns how many were deleted';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.purge(interval)'),
    ('operator', 'idemgate.purge_dead_letters(interval)');

-- Dispatcher (src/dispatcher.c): status of the background delivery.

CREATE FUNCTION idemgate.dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
              rounds bigint, claimed bigint, completed bigint, failed bigint,
              released bigint, last_round_at timestamptz)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_dispatcher_status';
COMMENT ON FUNCTION idemgate.dispatcher_status() IS
'One row per running dispatcher (none without shared_preload_libraries): requests in flight and counters since it started (claimed, completed, failed, released back to pending by the kill switch)';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.dispatcher_status()'),
    ('reader', 'idemgate.dispatcher_status()');

-- Privilege bundles (src/privileges.c).

CREATE TABLE idemgate.granted_bundles (
    role       regrole NOT NULL,
    bundle     text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by text,
    PRIMARY KEY (role, bundle)
);
COMMENT ON TABLE idemgate.granted_bundles IS 'Which roles hold which privilege bundle; maintained by grant_role and revoke_role';
-- Dumped with the data (the grants themselves are dumped as ACLs).
SELECT pg_catalog.pg_extension_config_dump('idemgate.granted_bundles', '');

CREATE FUNCTION idemgate.grant_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_role';
COMMENT ON FUNCTION idemgate.grant_role(regrole, text) IS
'Grant a privilege bundle (client, approver, operator, reader) to a role';

CREATE FUNCTION idemgate.revoke_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_role';
COMMENT ON FUNCTION idemgate.revoke_role(regrole, text) IS
'Revoke a privilege bundle from a role; rights it holds through its other bundles stay';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.grant_role(regrole,text)'),
    ('operator', 'idemgate.revoke_role(regrole,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.events'),
    ('reader', 'idemgate.dead_letters');

-- Privileges, last so that it covers every function defined above.
-- Nothing is executable by PUBLIC; bundles are granted with grant_role().
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA idemgate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA idemgate FROM PUBLIC;

-- Operators also read the ledger and the outbox: the runbook for unknown
-- effects and failure alerts starts from outbox rows (effect_id, last_error).
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.runs'),
    ('operator', 'idemgate.outbox');

-- The operator bundle may do everything the other bundles may.
INSERT INTO idemgate.bundle_members (bundle, fn, rel)
SELECT DISTINCT 'operator', b.fn, b.rel FROM idemgate.bundle_members b
WHERE b.bundle <> 'operator'
  AND NOT EXISTS (SELECT 1 FROM idemgate.bundle_members o WHERE o.bundle = 'operator'
                  AND o.fn IS NOT DISTINCT FROM b.fn AND o.rel IS NOT DISTINCT FROM b.rel);
