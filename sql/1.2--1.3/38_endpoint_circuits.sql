-- sql/1.2--1.3/38_endpoint_circuits.sql — endpoint health (SPEC §22;
-- src/policy/endpoint_circuits.c; docs/operations.md, "Endpoint health"): after
-- idemgate.circuit_failures retryable failures of one endpoint in a row
-- its circuit opens, a row here: the dispatcher holds the endpoint's
-- effects as pending (attempts untouched) and probes with the oldest due
-- one after a backoff from 5 s to 5 min; a success closes it. Written only
-- by the dispatcher and reset_circuit, only when a circuit opens, probes
-- or closes (a reference table on Citus: one node's probe decides for
-- all). The alert endpoint_down (40_alerts.sql) reads it.
\ir ../tables/endpoint_circuits.sql

\ir ../functions/reset_circuit.sql

-- Every endpoint with its circuit; waiting and waiting_since count the
-- pending effects of open circuits only (one aggregate over the outbox,
-- which Citus runs on every shard).
\ir ../views/endpoint_health.sql

-- The reader's columns of endpoint_health: 60_readers.sql.
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.reset_circuit(text,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.endpoint_health');
