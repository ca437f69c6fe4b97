-- sql/views/effect_policies.sql

CREATE OR REPLACE VIEW idemgate.effect_policies AS
SELECT effect_type, requires_approval, requires_requester, review_sample, cancel_window,
       reviews_requested, updated_at, updated_by
  FROM idemgate.effect_type_policies;

COMMENT ON VIEW idemgate.effect_policies IS
'The policy of each effect type that has one (set_effect_policy), with how many enqueue_effect calls its review_sample turned into approval requests';

REVOKE ALL ON idemgate.effect_policies FROM PUBLIC;
