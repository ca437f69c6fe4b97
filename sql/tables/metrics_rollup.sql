-- sql/tables/metrics_rollup.sql

-- Metrics that survive purge (src/metrics.c, src/metrics.h): purge adds
-- what metrics() counts of the rows it deletes to an hourly rollup, in the
-- same statement; metrics(since) = live rows + rolled-up hours. Nothing is
-- written on the claim or delivery paths.
CREATE TABLE idemgate.metrics_rollup (
    hour              timestamptz PRIMARY KEY,
    first_at          timestamptz NOT NULL,
    last_at           timestamptz NOT NULL,
    claimed           bigint NOT NULL DEFAULT 0,
    duplicates        bigint NOT NULL DEFAULT 0,
    recovered         bigint NOT NULL DEFAULT 0,
    approvals_decided bigint NOT NULL DEFAULT 0,
    human_approved    bigint NOT NULL DEFAULT 0,
    validations       bigint NOT NULL DEFAULT 0,
    invalid           bigint NOT NULL DEFAULT 0,
    auto_approved     bigint NOT NULL DEFAULT 0,
    retries           bigint NOT NULL DEFAULT 0,
    retry_exhausted   bigint NOT NULL DEFAULT 0,
    approval_waits    double precision[] NOT NULL DEFAULT '{}'
);

COMMENT ON TABLE idemgate.metrics_rollup IS
'What metrics() counted from purged runs, per UTC hour: first claims (claimed), duplicate and recovered claims, decided/approved approvals and their waits in seconds, validations, automatic approvals, retries; first_at/last_at bound the times counted. Written only by purge';

SELECT pg_catalog.pg_extension_config_dump('idemgate.metrics_rollup', '');

REVOKE ALL ON idemgate.metrics_rollup FROM PUBLIC;
