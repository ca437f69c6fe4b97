-- sql/tables/run_metrics_rollup.sql

-- ---------------------------------------------------------------------------
-- Run processing times per workflow (src/metrics.c). metrics() keeps its
-- 1.1 row type: a column added to a function's result changes its type
-- (DROP and CREATE), which would break every view or client that reads it
-- by position, so these figures get a function of their own, read by
-- prometheus() as well.
CREATE TABLE idemgate.run_metrics_rollup (
    hour               timestamptz NOT NULL,
    workflow           text,
    first_at           timestamptz NOT NULL,
    last_at            timestamptz NOT NULL,
    processing_seconds double precision[] NOT NULL DEFAULT '{}',
    retry_exhausted    bigint NOT NULL DEFAULT 0,
    UNIQUE NULLS NOT DISTINCT (hour, workflow)
);

COMMENT ON TABLE idemgate.run_metrics_rollup IS
'What run_metrics() counted from purged runs, per UTC hour and workflow (NULL: runs without one): the processing times in seconds and the runs whose retries ran out; first_at/last_at bound the times counted. Written only by purge';

SELECT pg_catalog.pg_extension_config_dump('idemgate.run_metrics_rollup', '');

REVOKE ALL ON idemgate.run_metrics_rollup FROM PUBLIC;
