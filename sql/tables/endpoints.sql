-- sql/tables/endpoints.sql

-- Endpoints: where each effect type is delivered. Headers may hold secrets,
-- so no bundle but operator can read this table.
CREATE TABLE idemgate.endpoints (
    effect_type            text PRIMARY KEY,
    url                    text NOT NULL,
    timeout                interval NOT NULL DEFAULT '10 seconds',
    max_attempts           integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 100),
    honors_idempotency_key boolean NOT NULL DEFAULT false,
    headers                jsonb NOT NULL DEFAULT '{}',
    provider_id_field      text NOT NULL DEFAULT 'id',
    created_at             timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at             timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- Per-endpoint limits (SPEC §14, src/policy/endpoints.c): requests per
    -- second and concurrent requests to this endpoint; NULL = none / the
    -- global idemgate.max_in_flight. The dispatchers keep them together
    -- (shared memory).
    rate_limit             double precision,
    max_in_flight          integer,
    -- Where the provider answers a status look-up of an unknown effect
    -- (SPEC §22, src/policy/status_url.c): a URL template with {effect_id}
    -- and optionally {provider_id}, read with GET.
    status_url             text
);

COMMENT ON TABLE idemgate.endpoints IS 'Registered HTTP endpoints per effect type; effects are only ever sent to these URLs';

SELECT pg_catalog.pg_extension_config_dump('idemgate.endpoints', '');

COMMENT ON COLUMN idemgate.endpoints.rate_limit IS
'Most requests per second to this endpoint (over any one-second window), NULL = no limit';

COMMENT ON COLUMN idemgate.endpoints.max_in_flight IS
'Most concurrent requests to this endpoint, NULL = only the global idemgate.max_in_flight';

COMMENT ON COLUMN idemgate.endpoints.status_url IS
'Where the provider answers a status look-up of an unknown effect (GET, a template with {effect_id} and optionally {provider_id}); NULL: unknown effects wait for resolve_effect';

REVOKE ALL ON idemgate.endpoints FROM PUBLIC;
