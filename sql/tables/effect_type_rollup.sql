-- sql/tables/effect_type_rollup.sql

CREATE TABLE idemgate.effect_type_rollup (
    effect_type text PRIMARY KEY,
    completed   bigint NOT NULL DEFAULT 0,
    failed      bigint NOT NULL DEFAULT 0
);

COMMENT ON TABLE idemgate.effect_type_rollup IS
'Per effect type, the completed effects and dead-lettered failures of purged runs, so the Prometheus counters idemgate_effects_completed_total/failed_total never go down. Written only by purge';

SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_rollup', '');

REVOKE ALL ON idemgate.effect_type_rollup FROM PUBLIC;
