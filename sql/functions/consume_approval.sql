-- sql/functions/consume_approval.sql

-- The functions that take an approval token keep it out of their own
-- error reports (docs/operations.md, "Approval tokens stay out of the
-- server log"): while they run, a failing statement is not logged
-- (log_min_error_statement = panic) and neither are its parameters
-- (log_parameter_max_length_on_error = 0). Role settings would reach only
-- the role they are set on, not the members of a group holding a bundle.
CREATE OR REPLACE FUNCTION idemgate.consume_approval(token text, decision text, approver text,
                                                     reason text DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET log_min_error_statement = panic SET log_parameter_max_length_on_error = 0
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_consume_approval';
COMMENT ON FUNCTION idemgate.consume_approval(text, text, text, text) IS
'Decide an approval as the authenticated approver, in one transaction: approved (run approved, effects in the outbox), rejected (run failed_terminal, nothing enqueued) or invalid (nothing changed; never says why)';
REVOKE ALL ON FUNCTION idemgate.consume_approval(text,text,text,text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.consume_approval(request jsonb)
RETURNS TABLE(outcome text, idempotency_key text, effect_ids uuid[])
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET log_min_error_statement = panic SET log_parameter_max_length_on_error = 0
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_consume_approval_request';
COMMENT ON FUNCTION idemgate.consume_approval(jsonb) IS
'consume_approval() with its arguments in one JSON object {token, decision, approver, reason}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.consume_approval(jsonb) FROM PUBLIC;
