-- sql/tables/alert_state.sql

CREATE TABLE idemgate.alert_state (
    alert      text NOT NULL,
    subject    text NOT NULL,
    severity   text NOT NULL,
    message    text NOT NULL,
    count      bigint NOT NULL,
    since      timestamptz,
    fired_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- The first keys published (a cleared alert's NOTIFY payload carries
    -- what it said last).
    keys       text[],
    PRIMARY KEY (alert, subject)
);

COMMENT ON TABLE idemgate.alert_state IS
'Alerts that publish_alerts last announced as firing; a NOTIFY is sent only when this set changes';

SELECT pg_catalog.pg_extension_config_dump('idemgate.alert_state', '');

COMMENT ON COLUMN idemgate.alert_state.keys IS
'The first keys of the runs the alert was about when last published (stalled_runs, terminal_failure, lease_takeovers, payload_mismatch), NULL for others';

REVOKE ALL ON idemgate.alert_state FROM PUBLIC;
