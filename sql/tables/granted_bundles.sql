-- sql/tables/granted_bundles.sql

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

REVOKE ALL ON idemgate.granted_bundles FROM PUBLIC;
