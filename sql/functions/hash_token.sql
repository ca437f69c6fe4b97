-- sql/functions/hash_token.sql

CREATE OR REPLACE FUNCTION idemgate.hash_token(token text) RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_hash_token';
COMMENT ON FUNCTION idemgate.hash_token(text) IS
'SHA-256 of an approval token''s bytes: what idemgate.approvals.token_hash holds';
REVOKE ALL ON FUNCTION idemgate.hash_token(text) FROM PUBLIC;
