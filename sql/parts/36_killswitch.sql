
-- Kill switch (src/killswitch.c): sends happen only when both the audited
-- switch and the setting idemgate.actions_enabled are on.

CREATE FUNCTION idemgate.set_actions_enabled(enabled boolean, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_actions_enabled';
COMMENT ON FUNCTION idemgate.set_actions_enabled(boolean, text, text) IS
'Turn external sends on or off (kill switch), recording actor and reason; queued effects are held, not lost';

CREATE FUNCTION idemgate.actions_enabled() RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_actions_enabled';
COMMENT ON FUNCTION idemgate.actions_enabled() IS
'True when external sends may happen: the kill switch and the setting idemgate.actions_enabled are both on';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.set_actions_enabled(boolean,text,text)'),
    ('client', 'idemgate.actions_enabled()'),
    ('reader', 'idemgate.actions_enabled()');

-- pg_dump keeps the switch: the control row is dumped, and restoring it
-- updates the row CREATE EXTENSION made instead of adding a second one.
CREATE FUNCTION idemgate.control_restore() RETURNS trigger
LANGUAGE C VOLATILE SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_control_restore';
COMMENT ON FUNCTION idemgate.control_restore() IS
'Trigger: a restored kill switch row (pg_dump) updates the existing row instead of duplicating it';
CREATE TRIGGER control_restore BEFORE INSERT ON idemgate.control
FOR EACH ROW EXECUTE FUNCTION idemgate.control_restore();
SELECT pg_catalog.pg_extension_config_dump('idemgate.control', '');

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.control_restore()');
