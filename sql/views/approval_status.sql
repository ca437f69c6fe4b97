-- sql/views/approval_status.sql

-- What operators and readers may see of approvals: no token hashes, no
-- cards or effects (they may hold customer data).
CREATE OR REPLACE VIEW idemgate.approval_status AS
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

REVOKE ALL ON idemgate.approval_status FROM PUBLIC;
