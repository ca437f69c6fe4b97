
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
