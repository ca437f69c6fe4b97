-- sql/functions/cancel_approval.sql

CREATE OR REPLACE FUNCTION idemgate.cancel_approval(approval_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_approval';
COMMENT ON FUNCTION idemgate.cancel_approval(uuid, text, text) IS
'Cancel an undecided approval as an operator: consumed with decision cancelled, its run failed_terminal like a rejection (no dead letter); cancelled, or invalid when already decided or expired; IG003 for an unknown approval';
REVOKE ALL ON FUNCTION idemgate.cancel_approval(uuid,text,text) FROM PUBLIC;
