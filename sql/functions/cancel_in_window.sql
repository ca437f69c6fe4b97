-- sql/functions/cancel_in_window.sql

CREATE OR REPLACE FUNCTION idemgate.cancel_in_window(effect_id uuid, approver text, reason text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window';
COMMENT ON FUNCTION idemgate.cancel_in_window(uuid, text, text) IS
'An approver cancels an automatic effect inside its cancel window (pending, before cancel_until): cancelled, never sent, no dead letter; audited with the approver. IG002 once the window has closed or for an effect without one, IG003 for an unknown effect';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(uuid,text,text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.cancel_in_window(request jsonb)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window_request';
COMMENT ON FUNCTION idemgate.cancel_in_window(jsonb) IS
'cancel_in_window() with its arguments in one JSON object {effect_id, approver, reason}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(jsonb) FROM PUBLIC;
