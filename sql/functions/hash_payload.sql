-- sql/functions/hash_payload.sql

CREATE OR REPLACE FUNCTION idemgate.hash_payload(payload jsonb) RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_hash_payload';
COMMENT ON FUNCTION idemgate.hash_payload(jsonb) IS
'SHA-256 of the payload''s canonical jsonb text; equals sha256(convert_to(payload::text, ''UTF8''))';
REVOKE ALL ON FUNCTION idemgate.hash_payload(jsonb) FROM PUBLIC;
