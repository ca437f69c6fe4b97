-- sql/tables/installation_secret.sql

-- The secret: 64 random bytes K (from two v4 UUIDs' pg_strong_random bits,
-- through SHA-256), kept as HMAC's two pads K xor 0x36 and K xor 0x5c so
-- that SQL computes HMAC-SHA-256 as sha256(opad || sha256(ipad || m)).
-- Made on first use (payload_hmac), not by the script, so that a restore
-- (CREATE EXTENSION, then the dumped rows) keeps the dumped secret and the
-- keyed hashes already written stay comparable.
CREATE TABLE idemgate.installation_secret (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    ipad      bytea NOT NULL CHECK (pg_catalog.octet_length(ipad) = 64),
    opad      bytea NOT NULL CHECK (pg_catalog.octet_length(opad) = 64)
);

COMMENT ON TABLE idemgate.installation_secret IS
'The per-installation secret of the keyed payload hashes readers see (HMAC-SHA-256 pads), made on first use; only the extension owner reads it';

SELECT pg_catalog.pg_extension_config_dump('idemgate.installation_secret', '');

REVOKE ALL ON idemgate.installation_secret FROM PUBLIC;
