-- sql/functions/peek_approval.sql

-- The functions that take an approval token keep it out of their own
-- error reports (docs/operations.md, "Approval tokens stay out of the
-- server log"): while they run, a failing statement is not logged
-- (log_min_error_statement = panic) and neither are its parameters
-- (log_parameter_max_length_on_error = 0). Role settings would reach only
-- the role they are set on, not the members of a group holding a bundle.
CREATE OR REPLACE FUNCTION idemgate.peek_approval(token text)
RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[],
                         expires_at timestamptz, card jsonb, effects jsonb)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET log_min_error_statement = panic SET log_parameter_max_length_on_error = 0
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_peek_approval';
COMMENT ON FUNCTION idemgate.peek_approval(text) IS
'For the GET confirmation page: the approval''s card, effects and status (pending, consumed or expired); changes nothing; no row for an unknown token';
REVOKE ALL ON FUNCTION idemgate.peek_approval(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.peek_approval(request jsonb)
RETURNS TABLE(approval_id uuid, idempotency_key text, status text, allowed_decisions text[], expires_at timestamptz, card jsonb, effects jsonb)
LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET log_min_error_statement = panic SET log_parameter_max_length_on_error = 0
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_peek_approval_request';
COMMENT ON FUNCTION idemgate.peek_approval(jsonb) IS
'peek_approval() with its argument in one JSON object {token}: the form for n8n; always one row, status invalid (other columns NULL) for an unknown token';
REVOKE ALL ON FUNCTION idemgate.peek_approval(jsonb) FROM PUBLIC;
