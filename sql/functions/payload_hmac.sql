-- sql/functions/payload_hmac.sql

-- payload_hmac(hash): the extension owner's only (the library calls it;
-- a caller who could pass any hash could confirm a guessed payload).
-- NULL in a read-only transaction before the secret exists (a standby).
CREATE OR REPLACE FUNCTION idemgate.payload_hmac(payload_hash bytea) RETURNS text
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s record;
  k bytea;
  i bytea;
  o bytea;
BEGIN
  SELECT x.ipad, x.opad INTO s FROM idemgate.installation_secret x;
  IF NOT FOUND THEN
    IF pg_catalog.current_setting('transaction_read_only')::boolean THEN
      RETURN NULL;
    END IF;
    k := pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.gen_random_uuid()::text, 'UTF8'))
         OPERATOR(pg_catalog.||)
         pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.gen_random_uuid()::text, 'UTF8'));
    i := k;
    o := k;
    FOR n IN 0..63 LOOP
      i := pg_catalog.set_byte(i, n, pg_catalog.get_byte(k, n) OPERATOR(pg_catalog.#) 54);
      o := pg_catalog.set_byte(o, n, pg_catalog.get_byte(k, n) OPERATOR(pg_catalog.#) 92);
    END LOOP;
    INSERT INTO idemgate.installation_secret (ipad, opad) VALUES (i, o) ON CONFLICT DO NOTHING;
    SELECT x.ipad, x.opad INTO s FROM idemgate.installation_secret x;
  END IF;
  RETURN pg_catalog.encode(pg_catalog.sha256(s.opad OPERATOR(pg_catalog.||)
                                             pg_catalog.sha256(s.ipad OPERATOR(pg_catalog.||) payload_hash)), 'hex');
END
$$;
COMMENT ON FUNCTION idemgate.payload_hmac(bytea) IS
'HMAC-SHA-256 of a payload hash under the installation secret (made on first use), in hex: the form of a payload hash that events and key_history show. Extension owner only';
REVOKE ALL ON FUNCTION idemgate.payload_hmac(bytea) FROM PUBLIC;
