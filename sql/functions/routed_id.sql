-- sql/functions/routed_id.sql

CREATE OR REPLACE FUNCTION idemgate.routed_id(bucket integer) RETURNS bigint
LANGUAGE C VOLATILE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_routed_id';
COMMENT ON FUNCTION idemgate.routed_id(integer) IS
'A new dead letter id on a distributed install: bit 62, 46 random bits, the bucket in the low 16 bits';
REVOKE ALL ON FUNCTION idemgate.routed_id(integer) FROM PUBLIC;
