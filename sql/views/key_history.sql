-- sql/views/key_history.sql

-- What happened to each key: the first claim's entry shows its origin and
-- the input as its keyed hash (payload_hmac: a reader cannot confirm a
-- guessed payload). On a distributed install the view reads an owner-only
-- copy, distributed_key_history, made by distribute().
CREATE OR REPLACE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key, 'origin', r.origin,
               'payload_hmac', idemgate.run_payload_hmac(r.idempotency_key))) AS details,
           NULL::uuid AS effect_id
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details, e.effect_id
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL
    UNION ALL
    SELECT o.idempotency_key, o.updated_at, 'effect_completed', NULL,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'provider_id', o.provider_id, 'status', o.last_status, 'attempt', o.attempts)),
           o.effect_id
      FROM idemgate.outbox o
     WHERE o.state OPERATOR(pg_catalog.=) 'completed'
    UNION ALL
    -- A run with effects completes only when its last effect is settled.
    SELECT r.idempotency_key, r.updated_at, 'state_changed', NULL,
           pg_catalog.jsonb_build_object('from', 'approved', 'to', 'completed', 'version', r.version),
           NULL
      FROM idemgate.runs r
     WHERE r.state OPERATOR(pg_catalog.=) 'completed'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key);

COMMENT ON VIEW idemgate.key_history IS
'Everything that happened to each key: its first claim (from runs), every event, each delivered effect (from outbox) and the completion of a run by its effects (from runs), for "did we process this key?" and "did we send?"';

REVOKE ALL ON idemgate.key_history FROM PUBLIC;
