
-- Privilege bundles (src/privileges.c).

CREATE TABLE idemgate.granted_bundles (
    role       regrole NOT NULL,
    bundle     text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by text,
    PRIMARY KEY (role, bundle)
);
COMMENT ON TABLE idemgate.granted_bundles IS 'Which roles hold which privilege bundle; maintained by grant_role and revoke_role';
-- Dumped with the data (the grants themselves are dumped as ACLs).
SELECT pg_catalog.pg_extension_config_dump('idemgate.granted_bundles', '');

CREATE FUNCTION idemgate.grant_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_role';
COMMENT ON FUNCTION idemgate.grant_role(regrole, text) IS
'Grant a privilege bundle (client, approver, operator, reader) to a role';

CREATE FUNCTION idemgate.revoke_role(role regrole, bundle text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_role';
COMMENT ON FUNCTION idemgate.revoke_role(regrole, text) IS
'Revoke a privilege bundle from a role; rights it holds through its other bundles stay';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.grant_role(regrole,text)'),
    ('operator', 'idemgate.revoke_role(regrole,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.events'),
    ('reader', 'idemgate.dead_letters');
