-- sql/tables/endpoint_circuits.sql

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
