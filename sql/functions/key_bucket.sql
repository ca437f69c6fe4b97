-- sql/functions/key_bucket.sql

CREATE OR REPLACE FUNCTION idemgate.key_bucket(key text) RETURNS integer
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_key_bucket';
COMMENT ON FUNCTION idemgate.key_bucket(text) IS
'The bucket of a run key: the first two bytes of its SHA-256, 0..65535; the distribution column of a distributed install';
REVOKE ALL ON FUNCTION idemgate.key_bucket(text) FROM PUBLIC;
