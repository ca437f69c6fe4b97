-- Hardening (issue 11, SPEC §15; C in src/pull_grants.c, src/identity.c,
-- src/destinations.c, src/doc_limits.c and src/privileges.c).

-- Pull API per effect type: a client may claim_effects (and complete or
-- fail) only the types granted to it; a type with a registered endpoint
-- belongs to the dispatcher and only an operator may pull it.
CREATE TABLE idemgate.effect_type_grants (
    role        regrole NOT NULL,
    effect_type text NOT NULL,
    granted_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by  text,
    PRIMARY KEY (effect_type, role)
);
COMMENT ON TABLE idemgate.effect_type_grants IS
'Which roles may pull (claim_effects, complete_effect, fail_effect) which effect types; maintained by grant_effect_type and revoke_effect_type';
SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_grants', '');
REVOKE ALL ON idemgate.effect_type_grants FROM PUBLIC;

CREATE FUNCTION idemgate.grant_effect_type(role regrole, effect_type text) RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_grant_effect_type';
COMMENT ON FUNCTION idemgate.grant_effect_type(regrole, text) IS
'Let a role pull effects of one type with claim_effects / complete_effect / fail_effect (types without an endpoint; a type with an endpoint belongs to the dispatcher)';

CREATE FUNCTION idemgate.revoke_effect_type(role regrole, effect_type text) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_revoke_effect_type';
COMMENT ON FUNCTION idemgate.revoke_effect_type(regrole, text) IS
'Stop a role pulling effects of one type; false when it had no such grant';

REVOKE EXECUTE ON FUNCTION idemgate.grant_effect_type(regrole, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION idemgate.revoke_effect_type(regrole, text) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.grant_effect_type(regrole,text)'),
    ('operator', 'idemgate.revoke_effect_type(regrole,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('operator', 'idemgate.effect_type_grants');

-- Roles that already hold a bundle get its new members from 99_release_grants.sql
-- (which also skips roles dropped since, and keeps the grants out of pg_init_privs).
