-- sql/tables/watched_workflows.sql

-- Watched workflows: silence alerts.
CREATE TABLE idemgate.watched_workflows (
    workflow          text PRIMARY KEY,
    expected_interval interval NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE idemgate.watched_workflows IS 'Workflows expected to be claimed at least every expected_interval (silence alert at twice that)';

SELECT pg_catalog.pg_extension_config_dump('idemgate.watched_workflows', '');

REVOKE ALL ON idemgate.watched_workflows FROM PUBLIC;
