-- sql/tables/effect_type_policies.sql

-- The policies, one row per effect type (configuration, like endpoints:
-- pg_dump keeps it). reviews_requested counts the enqueue_effect calls
-- turned into a review, per type, since the policy was first set.
CREATE TABLE idemgate.effect_type_policies (
    effect_type        text PRIMARY KEY,
    requires_approval  boolean NOT NULL DEFAULT false,
    requires_requester boolean NOT NULL DEFAULT false,
    review_sample      real NOT NULL DEFAULT 0
                       CHECK (review_sample >= 0 AND review_sample <= 1),
    cancel_window      interval CHECK (cancel_window > interval '0'),
    reviews_requested  bigint NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_by         text
);

COMMENT ON TABLE idemgate.effect_type_policies IS
'Policy per effect type, written by set_effect_policy: requires_approval (enqueue_effect refuses the type), requires_requester (request_approval needs requested_by and audience), review_sample (fraction of automatic enqueue_effect calls turned into an approval request), cancel_window (automatic effects wait that long; an approver may cancel them meanwhile)';

COMMENT ON COLUMN idemgate.effect_type_policies.reviews_requested IS
'enqueue_effect calls with an effect of this type turned into an approval request by review_sample, since the policy was set';

SELECT pg_catalog.pg_extension_config_dump('idemgate.effect_type_policies', '');

REVOKE ALL ON idemgate.effect_type_policies FROM PUBLIC;
