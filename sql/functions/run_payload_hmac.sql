-- sql/functions/run_payload_hmac.sql

-- run_payload_hmac(key): the keyed hash of a stored run's payload, for
-- key_history. It hashes only what is stored, never a caller's guess.
CREATE OR REPLACE FUNCTION idemgate.run_payload_hmac(key text) RETURNS text
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT idemgate.payload_hmac(r.payload_hash) FROM idemgate.runs r WHERE r.idempotency_key = key;
END;
COMMENT ON FUNCTION idemgate.run_payload_hmac(text) IS
'The keyed hash (payload_hmac) of the payload stored for key, NULL when there is no such run: what key_history shows of a claim''s input';
REVOKE ALL ON FUNCTION idemgate.run_payload_hmac(text) FROM PUBLIC;
