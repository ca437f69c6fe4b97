-- sql/1.2--1.3/10_tombstones.sql — purge forgets payloads, not keys
-- (src/ledger/tombstones.c). For each run it deletes, purge keeps the first 8
-- bytes of the SHA-256 of its key and of its payload hash (as bigints),
-- its final state and when it finished and was purged: a claim of that key
-- later answers duplicate with state purged (IG001 for another payload),
-- never claimed. Digests, not the key: a key often names a customer, and
-- purge is how personal data leaves. About 90 bytes per key with its
-- primary key (bench/storage); a new key collides with one of a hundred
-- million tombstones with a probability of 5e-12.
\ir ../tables/tombstones.sql

\ir ../functions/purge_tombstones.sql

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.purge_tombstones(interval)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.tombstones');
