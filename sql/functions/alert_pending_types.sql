-- sql/functions/alert_pending_types.sql

-- Per effect type with pending effects: those due for longer than
-- stuck_after and, unless here (a dispatcher serves this database), the
-- HTTP ones due for longer than missing_after. The types come from a skip
-- scan of the partial index outbox_due_idx (effect_type, next_attempt_at)
-- WHERE pending, so that publish_alerts (every second) never reads a
-- healthy backlog row by row: each type costs an index range of its old
-- rows only. Effects are pending only once their run was approved; one
-- whose run was failed since is never sent either, so it counts as stuck
-- too (cancel_effect it).
CREATE OR REPLACE FUNCTION idemgate.alert_pending_types(stuck_after interval, missing_after interval, here boolean)
RETURNS TABLE(effect_type text, stuck bigint, stuck_since timestamptz,
                         overdue bigint, overdue_since timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
WITH RECURSIVE ptypes(effect_type) AS (
    (SELECT o.effect_type FROM idemgate.outbox o
      WHERE o.state = 'pending' ORDER BY o.effect_type LIMIT 1)
    UNION ALL
    SELECT (SELECT o.effect_type FROM idemgate.outbox o
             WHERE o.state = 'pending' AND o.effect_type > p.effect_type
             ORDER BY o.effect_type LIMIT 1)
      FROM ptypes p WHERE p.effect_type IS NOT NULL
)
SELECT p.effect_type, st.stuck, st.stuck_since, ov.overdue, ov.overdue_since
  FROM ptypes p
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS stuck, pg_catalog.min(o.next_attempt_at) AS stuck_since
        FROM idemgate.outbox o
       WHERE o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at < pg_catalog.now() - alert_pending_types.stuck_after) st
  CROSS JOIN LATERAL (
      SELECT pg_catalog.count(*) AS overdue, pg_catalog.min(o.next_attempt_at) AS overdue_since
        FROM idemgate.outbox o
       WHERE NOT alert_pending_types.here
         AND EXISTS (SELECT 1 FROM idemgate.endpoints ep WHERE ep.effect_type = p.effect_type)
         AND o.state = 'pending' AND o.effect_type = p.effect_type
         AND o.next_attempt_at <= pg_catalog.now() - alert_pending_types.missing_after) ov
 WHERE p.effect_type IS NOT NULL;
END;
COMMENT ON FUNCTION idemgate.alert_pending_types(interval, interval, boolean) IS
'Part of idemgate.alert_instances: per effect type, pending effects due for longer than stuck_after, and (unless here) HTTP effects due for longer than missing_after';
REVOKE ALL ON FUNCTION idemgate.alert_pending_types(interval,interval,boolean) FROM PUBLIC;
