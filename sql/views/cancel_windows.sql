-- sql/views/cancel_windows.sql

-- The effects an approver may still cancel: pending, inside their window.
-- A window only comes from a policy (whose row set_effect_policy never
-- deletes), and an effect in its window is not due yet, so the look-up is
-- outbox_due_idx per policy type, never a scan of the whole outbox.
CREATE OR REPLACE VIEW idemgate.cancel_windows AS
SELECT o.effect_id, o.idempotency_key, o.effect_type, o.target, o.payload, o.cancel_until, o.created_at
  FROM idemgate.effect_type_policies p
  JOIN idemgate.outbox o ON o.effect_type = p.effect_type
 WHERE o.state = 'pending'
   AND o.next_attempt_at > pg_catalog.now()
   AND o.cancel_until > pg_catalog.now();

COMMENT ON VIEW idemgate.cancel_windows IS
'Automatic effects still inside their cancel window (effect type policy cancel_window): pending, not due before cancel_until; an approver may cancel them with cancel_in_window';

REVOKE ALL ON idemgate.cancel_windows FROM PUBLIC;
