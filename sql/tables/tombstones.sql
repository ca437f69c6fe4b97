-- sql/tables/tombstones.sql

-- sql/1.2--1.3/10_tombstones.sql — purge forgets payloads, not keys
-- (src/ledger/tombstones.c). For each run it deletes, purge keeps the first 8
-- bytes of the SHA-256 of its key and of its payload hash (as bigints),
-- its final state and when it finished and was purged: a claim of that key
-- later answers duplicate with state purged (IG001 for another payload),
-- never claimed. Digests, not the key: a key often names a customer, and
-- purge is how personal data leaves. About 90 bytes per key with its
-- primary key (bench/storage); a new key collides with one of a hundred
-- million tombstones with a probability of 5e-12.
CREATE TABLE idemgate.tombstones (
    finished_at    timestamptz NOT NULL,
    purged_at      timestamptz NOT NULL,
    key_digest     bigint NOT NULL PRIMARY KEY,
    payload_digest bigint NOT NULL,
    final_state    "char" NOT NULL
);

COMMENT ON TABLE idemgate.tombstones IS
'What purge keeps of each run it deletes, for idemgate.tombstone_retention: key_digest and payload_digest (the first 8 bytes of the SHA-256 of the key and of the payload hash, as bigints), final_state (c: completed, f: failed_terminal), finished_at and purged_at. A claim of a tombstoned key answers duplicate with state purged; written by purge only';

SELECT pg_catalog.pg_extension_config_dump('idemgate.tombstones', '');

REVOKE ALL ON idemgate.tombstones FROM PUBLIC;
