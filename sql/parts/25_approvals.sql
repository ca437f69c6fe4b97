
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
