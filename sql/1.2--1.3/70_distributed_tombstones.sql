-- sql/1.2--1.3/70_distributed_tombstones.sql — tombstones on Citus
-- (docs/citus.md): a per-run table like the others, distributed by bucket
-- and co-located with runs, so a claim's look-up and purge's insert stay
-- on the key's shard. A tombstone keeps no key, but its bucket is the key
-- digest's top 16 bits (key_bucket is the first two bytes of the same
-- SHA-256, src/citus/distributed.c), so tombstones made before get theirs from
-- key_digest.

-- distribute_tombstones(): on the coordinator of an install whose runs are
-- distributed, give tombstones their bucket and a primary key that
-- includes it on every node, and distribute them co-located with runs.
-- distribute() calls it; an install distributed under 1.2 calls it once
-- after ALTER EXTENSION idemgate UPDATE on every node.
\ir ../functions/distribute_tombstones.sql
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.distribute_tombstones()');

-- distribute() of 1.2 (idemgate--1.1--1.2.sql, "60_distribute") with the
-- tombstones locked with the other per-run tables and distributed after
-- them, and the installation secret (sql/1.2--1.3/60_readers.sql) a
-- reference table: one secret, so the keyed hashes of every node agree.
\ir ../functions/distribute.sql
