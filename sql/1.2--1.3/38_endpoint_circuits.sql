-- sql/1.2--1.3/38_endpoint_circuits.sql — endpoint health (SPEC §22;
-- src/policy/endpoint_circuits.c; docs/operations.md, "Endpoint health"): after
-- idemgate.circuit_failures retryable failures of one endpoint in a row
-- its circuit opens, a row here: the dispatcher holds the endpoint's
-- effects as pending (attempts untouched) and probes with the oldest due
-- one after a backoff from 5 s to 5 min; a success closes it. Written only
-- by the dispatcher and reset_circuit, only when a circuit opens, probes
-- or closes (a reference table on Citus: one node's probe decides for
-- all). The alert endpoint_down (40_alerts.sql) reads it.
CREATE TABLE idemgate.endpoint_circuits (
    effect_type   text PRIMARY KEY,
    opened_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    failures      integer NOT NULL CHECK (failures > 0),
    error_class   text NOT NULL,
    last_status   integer,
    probes        integer NOT NULL DEFAULT 0 CHECK (probes >= 0),
    next_probe_at timestamptz NOT NULL,
    probe_owner   uuid,
    probe_until   timestamptz
);
COMMENT ON TABLE idemgate.endpoint_circuits IS
'Open endpoint circuits: the endpoint failed idemgate.circuit_failures times in a row; its effects wait, a probe goes out at next_probe_at (written by the dispatcher and reset_circuit only)';
REVOKE ALL ON idemgate.endpoint_circuits FROM PUBLIC;

CREATE FUNCTION idemgate.reset_circuit(effect_type text, actor text) RETURNS boolean
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_reset_circuit';
REVOKE ALL ON FUNCTION idemgate.reset_circuit(text, text) FROM PUBLIC;
COMMENT ON FUNCTION idemgate.reset_circuit(text, text) IS
'Close an endpoint''s circuit by hand: its held effects go out again at once; true when it was open; audited (event endpoint_circuit_reset); IG003 for a type without an endpoint';

-- Every endpoint with its circuit; waiting and waiting_since count the
-- pending effects of open circuits only (one aggregate over the outbox,
-- which Citus runs on every shard).
CREATE VIEW idemgate.endpoint_health AS
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

-- The reader's columns of endpoint_health: 60_readers.sql.
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.reset_circuit(text,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.endpoint_health');
