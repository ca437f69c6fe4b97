-- sql/functions/set_actions_enabled.sql

CREATE OR REPLACE FUNCTION idemgate.set_actions_enabled(enabled boolean, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_actions_enabled';
COMMENT ON FUNCTION idemgate.set_actions_enabled(boolean, text, text) IS
'Turn external sends on or off (kill switch), recording actor and reason; queued effects are held, not lost';
REVOKE ALL ON FUNCTION idemgate.set_actions_enabled(boolean,text,text) FROM PUBLIC;
