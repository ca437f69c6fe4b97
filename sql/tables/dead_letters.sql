-- sql/tables/dead_letters.sql

-- Dead letters: where a failure waits for a person.
CREATE TABLE idemgate.dead_letters (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('run', 'effect')),
    idempotency_key text NOT NULL,
    effect_id       uuid,
    effect_type     text,
    payload         jsonb,
    error_class     text,
    error           text,
    attempts        integer NOT NULL DEFAULT 0,
    dead_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    reinjected_at   timestamptz,
    reinjected_by   text,
    -- An effect's dead letter also keeps its target, so the full effect
    -- (type, target, payload) survives even if the outbox row is purged.
    target          text
);

CREATE INDEX dead_letters_open_idx ON idemgate.dead_letters (dead_at) WHERE reinjected_at IS NULL;

COMMENT ON TABLE idemgate.dead_letters IS 'Failures that exhausted their retries, with the full input, the error and the attempt count; reinject with idemgate.reinject';

SELECT pg_catalog.pg_extension_config_dump('idemgate.dead_letters', '');

SELECT pg_catalog.pg_extension_config_dump('idemgate.dead_letters_id_seq', '');

COMMENT ON COLUMN idemgate.dead_letters.target IS 'For effect dead letters: the effect''s target (payload holds the effect''s payload)';

REVOKE ALL ON idemgate.dead_letters FROM PUBLIC;
REVOKE ALL ON SEQUENCE idemgate.dead_letters_id_seq FROM PUBLIC;
