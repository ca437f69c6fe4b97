-- sql/tables/control.sql

-- Control: the audited kill switch (a single row).
CREATE TABLE idemgate.control (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    actions_enabled boolean NOT NULL DEFAULT true,
    changed_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    changed_by      text,
    reason          text
);
INSERT INTO idemgate.control (singleton) VALUES (true);

COMMENT ON TABLE idemgate.control IS 'Kill switch state; change it with idemgate.set_actions_enabled';

CREATE TRIGGER control_restore BEFORE INSERT ON idemgate.control
FOR EACH ROW EXECUTE FUNCTION idemgate.control_restore();

SELECT pg_catalog.pg_extension_config_dump('idemgate.control', '');

CREATE TRIGGER hold_sends_on_switch_off AFTER INSERT OR UPDATE ON idemgate.control
FOR EACH ROW WHEN (NOT NEW.actions_enabled) EXECUTE FUNCTION idemgate.hold_sends_trigger();

REVOKE ALL ON idemgate.control FROM PUBLIC;
