-- sql/tables/effect_type_grants.sql

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
