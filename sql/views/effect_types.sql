-- sql/views/effect_types.sql

-- Per-type overview (reader). One row per type that has effects, an
-- endpoint or a pause. failed_24h counts effects dead-lettered (failed) in
-- the last 24 hours, completed_24h effects completed in them.
CREATE OR REPLACE VIEW idemgate.effect_types AS
WITH o AS (
    SELECT o.effect_type,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending') AS pending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending'
                                          AND o.next_attempt_at <= pg_catalog.now()
                                          AND r.state = 'approved') AS due,
           pg_catalog.count(*) FILTER (WHERE o.state = 'sending') AS sending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'unknown') AS unknown,
           pg_catalog.count(*) FILTER (WHERE o.state = 'failed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS failed_24h,
           pg_catalog.count(*) FILTER (WHERE o.state = 'completed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS completed_24h,
           pg_catalog.min(o.created_at) FILTER (WHERE o.state = 'pending') AS oldest_pending
      FROM idemgate.outbox o
      LEFT JOIN idemgate.runs r ON r.idempotency_key = o.idempotency_key
     GROUP BY o.effect_type
), t AS (
    SELECT effect_type FROM o
    UNION
    SELECT effect_type FROM idemgate.endpoints
    UNION
    SELECT effect_type FROM idemgate.paused_effect_types
)
SELECT t.effect_type,
       EXISTS (SELECT 1 FROM idemgate.endpoints e WHERE e.effect_type = t.effect_type) AS has_endpoint,
       EXISTS (SELECT 1 FROM idemgate.paused_effect_types p WHERE p.effect_type = t.effect_type) AS paused,
       COALESCE(o.pending, 0) AS pending, COALESCE(o.due, 0) AS due,
       COALESCE(o.sending, 0) AS sending, COALESCE(o.unknown, 0) AS unknown,
       COALESCE(o.failed_24h, 0) AS failed_24h, COALESCE(o.completed_24h, 0) AS completed_24h,
       pg_catalog.now() - o.oldest_pending AS oldest_pending_age
  FROM t LEFT JOIN o ON o.effect_type = t.effect_type;

COMMENT ON VIEW idemgate.effect_types IS
'One row per effect type with effects, an endpoint or a pause: whether it has an endpoint and is paused, its backlog (pending, due, sending, unknown), effects failed and completed in the last 24 hours, and the age of its oldest pending effect';

REVOKE ALL ON idemgate.effect_types FROM PUBLIC;
