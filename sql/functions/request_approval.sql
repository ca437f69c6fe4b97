-- sql/functions/request_approval.sql

CREATE OR REPLACE FUNCTION idemgate.request_approval(key text, owner uuid, version bigint, effects jsonb,
                                                     expires_in interval DEFAULT '24 hours',
                                                     card jsonb DEFAULT NULL, audience text[] DEFAULT NULL,
                                                     requested_by text DEFAULT NULL)
RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_request_approval';
COMMENT ON FUNCTION idemgate.request_approval(text, uuid, bigint, jsonb, interval, jsonb, text[], text) IS
'As the live owner of a processing run, move it to awaiting_human and create a single-use approval for its effects; returns the raw token once (only its SHA-256 is stored), or a row of NULLs when ownership was lost';
REVOKE ALL ON FUNCTION idemgate.request_approval(text,uuid,bigint,jsonb,interval,jsonb,text[],text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.request_approval(request jsonb)
RETURNS TABLE(approval_id uuid, token text, expires_at timestamptz, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_request_approval_request';
COMMENT ON FUNCTION idemgate.request_approval(jsonb) IS
'request_approval() with its arguments in one JSON object {key, owner, version, effects, expires_in, card, audience, requested_by}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.request_approval(jsonb) FROM PUBLIC;
