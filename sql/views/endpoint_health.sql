-- sql/views/endpoint_health.sql

-- Every endpoint with its circuit; waiting and waiting_since count the
-- pending effects of open circuits only (one aggregate over the outbox,
-- which Citus runs on every shard).
CREATE OR REPLACE VIEW idemgate.endpoint_health AS
SELECT ep.effect_type, ep.url,
       CASE WHEN c.effect_type IS NULL THEN 'closed'
            WHEN c.probe_owner IS NOT NULL AND c.probe_until > pg_catalog.now() THEN 'probing'
            ELSE 'open' END AS state,
       c.opened_at, c.failures, c.error_class, c.last_status, c.probes, c.next_probe_at,
       COALESCE(w.waiting, 0) AS waiting, w.waiting_since
  FROM idemgate.endpoints ep
  LEFT JOIN idemgate.endpoint_circuits c ON c.effect_type = ep.effect_type
  LEFT JOIN (SELECT o.effect_type, pg_catalog.count(*) AS waiting,
                    pg_catalog.min(o.next_attempt_at) AS waiting_since
               FROM idemgate.outbox o
              WHERE o.state = 'pending'
                AND o.effect_type IN (SELECT oc.effect_type FROM idemgate.endpoint_circuits oc)
              GROUP BY o.effect_type) w ON w.effect_type = ep.effect_type;

COMMENT ON VIEW idemgate.endpoint_health IS
'Each endpoint''s circuit (closed, open, probing), since when and why, its probes, and how many effects wait behind an open one (bundles operator and reader; readers read every column but url)';

REVOKE ALL ON idemgate.endpoint_health FROM PUBLIC;
