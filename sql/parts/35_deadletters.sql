
-- Dead letters and reinjection (src/deadletters.c).

-- An effect's dead letter also keeps its target, so the full effect
-- (type, target, payload) survives even if the outbox row is purged.
ALTER TABLE idemgate.dead_letters ADD COLUMN target text;
COMMENT ON COLUMN idemgate.dead_letters.target IS 'For effect dead letters: the effect''s target (payload holds the effect''s payload)';
