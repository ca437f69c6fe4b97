-- sql/views/dead_letter_summary.sql

CREATE OR REPLACE VIEW idemgate.dead_letter_summary AS
SELECT d.id, d.kind, d.idempotency_key, d.effect_id, d.effect_type, d.target, d.error_class,
       d.attempts, d.dead_at, d.reinjected_at, d.reinjected_by
  FROM idemgate.dead_letters d;

COMMENT ON VIEW idemgate.dead_letter_summary IS
'idemgate.dead_letters without payload and error: what failed, where and when (bundles reader and operator)';

REVOKE ALL ON idemgate.dead_letter_summary FROM PUBLIC;
