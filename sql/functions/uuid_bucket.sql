-- sql/functions/uuid_bucket.sql

CREATE OR REPLACE FUNCTION idemgate.uuid_bucket(id uuid) RETURNS integer
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_uuid_bucket';
COMMENT ON FUNCTION idemgate.uuid_bucket(uuid) IS
'The bucket an effect or approval id carries (a version 8 UUID made on a distributed install), or NULL';
REVOKE ALL ON FUNCTION idemgate.uuid_bucket(uuid) FROM PUBLIC;
