-- sql/tables/events.sql

-- Events: the audit trail. One row per state change and operator action.
-- Raw payloads and tokens are never copied here.
CREATE TABLE idemgate.events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT pg_catalog.now(),
    idempotency_key text,
    effect_id       uuid,
    kind            text NOT NULL,
    actor           text,
    details         jsonb
);

CREATE INDEX events_key_idx ON idemgate.events (idempotency_key);

CREATE INDEX events_kind_at_idx ON idemgate.events (kind, at);

COMMENT ON TABLE idemgate.events IS 'Audit trail: one row per claim outcome, state change and operator action (no raw payloads or tokens)';

SELECT pg_catalog.pg_extension_config_dump('idemgate.events', '');

-- The identity sequences too, or a restored database would reuse event and
-- dead letter ids already present in the restored rows.
SELECT pg_catalog.pg_extension_config_dump('idemgate.events_id_seq', '');

-- The silence alert looks up a watched workflow's last recovered or
-- duplicate claim (a first claim writes no event; its time is
-- runs.created_at). details->>'workflow' = the watched workflow implies it
-- is not null, so the planner proves this predicate, and claims without a
-- workflow put no entry here: one index insert and ~70 bytes of WAL less
-- per such duplicate (bench/claim).
CREATE INDEX events_claim_workflow_idx
    ON idemgate.events ((details OPERATOR(pg_catalog.->>) 'workflow'), at)
    WHERE kind IN ('recovered', 'duplicate')
      AND (details OPERATOR(pg_catalog.->>) 'workflow') IS NOT NULL;

REVOKE ALL ON idemgate.events FROM PUBLIC;
REVOKE ALL ON SEQUENCE idemgate.events_id_seq FROM PUBLIC;
