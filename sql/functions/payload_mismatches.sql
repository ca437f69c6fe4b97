-- sql/functions/payload_mismatches.sql

-- ---------------------------------------------------------------------------
-- Payload mismatches (IG001): the claim's transaction rolls back, so they
-- are counted in shared memory (src/payload_mismatches.c), one row per
-- workflow with mismatches since the server started; lost at a restart.
CREATE OR REPLACE FUNCTION idemgate.payload_mismatches()
RETURNS TABLE(workflow text, mismatches bigint, first_at timestamptz, last_at timestamptz,
                         first_keys text[], firing boolean)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_payload_mismatches';
COMMENT ON FUNCTION idemgate.payload_mismatches() IS
'Claims refused with IG001 (same key, different payload) per workflow since the server started (their transactions rolled back; counted in shared memory, so only with shared_preload_libraries, and lost at a restart): mismatches, first and last time, the first keys, and firing (the last one less than an hour ago: the payload_mismatch alert)';
REVOKE ALL ON FUNCTION idemgate.payload_mismatches() FROM PUBLIC;
