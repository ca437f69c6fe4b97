
-- ---------------------------------------------------------------------------
-- 30_operations.sql — operating effects per type (SPEC §14, issue 10):
-- pause/resume per type, cancellation, unregistering endpoints, delayed
-- effects, the effect_types view, the new alerts, the metrics rollup that
-- purge keeps, and per-type Prometheus series.
-- ---------------------------------------------------------------------------

-- Paused effect types (src/effect_types.c). THE PAUSE TABLE IS
-- idemgate.paused_effect_types: a type is paused while it has a row here.
-- claim_effects and the dispatcher's claim statement skip paused types;
-- the dispatcher's send-time barrier (45_dispatch.sql, src/dispatcher.c)
-- reads the same table (or EffectTypePaused() in src/effect_types.h).
CREATE TABLE idemgate.paused_effect_types (
    effect_type text PRIMARY KEY,
    paused_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    paused_by   text NOT NULL,
    reason      text NOT NULL
);
COMMENT ON TABLE idemgate.paused_effect_types IS
'Effect types held by pause_effect_type: neither the dispatcher nor claim_effects takes their effects until resume_effect_type';
SELECT pg_catalog.pg_extension_config_dump('idemgate.paused_effect_types', '');
REVOKE ALL ON idemgate.paused_effect_types FROM PUBLIC;

CREATE FUNCTION idemgate.pause_effect_type(effect_type text, actor text, reason text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_pause_effect_type';
COMMENT ON FUNCTION idemgate.pause_effect_type(text, text, text) IS
'Hold every effect of one type (like the kill switch, for one type): not claimed by the dispatcher nor by claim_effects until resume_effect_type; audited with actor and reason; IG003 for a type with no effects, endpoint or pause';

CREATE FUNCTION idemgate.resume_effect_type(effect_type text, actor text)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_resume_effect_type';
COMMENT ON FUNCTION idemgate.resume_effect_type(text, text) IS
'End the pause of an effect type: its held effects go out again; audited; IG003 for a type with no effects, endpoint or pause';

CREATE FUNCTION idemgate.unregister_endpoint(effect_type text, actor text)
RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_unregister_endpoint';
COMMENT ON FUNCTION idemgate.unregister_endpoint(text, text) IS
'Remove the HTTP endpoint of an effect type (audited); its pending effects then wait for claim_effects or a new endpoint. False when none was registered';

-- Cancellation (src/cancel.c): a new outbox state, cancelled — never sent,
-- no dead letter, settled like completed for the run and for purge.
ALTER TABLE idemgate.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE idemgate.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sending', 'completed', 'unknown', 'failed', 'cancelled'));

CREATE FUNCTION idemgate.cancel_effect(effect_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_effect';
COMMENT ON FUNCTION idemgate.cancel_effect(uuid, text, text) IS
'Cancel a pending or unknown effect: state cancelled, never sent afterwards, no dead letter; the run completes when its other effects are settled. IG002 from any other state, IG003 for an unknown effect';

CREATE FUNCTION idemgate.cancel_approval(approval_id uuid, actor text, reason text)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_approval';
COMMENT ON FUNCTION idemgate.cancel_approval(uuid, text, text) IS
'Cancel an undecided approval as an operator: consumed with decision cancelled, its run failed_terminal like a rejection (no dead letter); cancelled, or invalid when already decided or expired; IG003 for an unknown approval';

-- Per-type overview (reader). One row per type that has effects, an
-- endpoint or a pause. failed_24h counts effects dead-lettered (failed) in
-- the last 24 hours, completed_24h effects completed in them.
CREATE VIEW idemgate.effect_types AS
WITH o AS (
    SELECT o.effect_type,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending') AS pending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'pending'
                                          AND o.next_attempt_at <= pg_catalog.now()
                                          AND r.state = 'approved') AS due,
           pg_catalog.count(*) FILTER (WHERE o.state = 'sending') AS sending,
           pg_catalog.count(*) FILTER (WHERE o.state = 'unknown') AS unknown,
           pg_catalog.count(*) FILTER (WHERE o.state = 'failed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS failed_24h,
           pg_catalog.count(*) FILTER (WHERE o.state = 'completed'
                                          AND o.updated_at > pg_catalog.now() - interval '24 hours') AS completed_24h,
           pg_catalog.min(o.created_at) FILTER (WHERE o.state = 'pending') AS oldest_pending
      FROM idemgate.outbox o
      LEFT JOIN idemgate.runs r ON r.idempotency_key = o.idempotency_key
     GROUP BY o.effect_type
), t AS (
    SELECT effect_type FROM o
    UNION
    SELECT effect_type FROM idemgate.endpoints
    UNION
    SELECT effect_type FROM idemgate.paused_effect_types
)
SELECT t.effect_type,
       EXISTS (SELECT 1 FROM idemgate.endpoints e WHERE e.effect_type = t.effect_type) AS has_endpoint,
       EXISTS (SELECT 1 FROM idemgate.paused_effect_types p WHERE p.effect_type = t.effect_type) AS paused,
       COALESCE(o.pending, 0) AS pending, COALESCE(o.due, 0) AS due,
       COALESCE(o.sending, 0) AS sending, COALESCE(o.unknown, 0) AS unknown,
       COALESCE(o.failed_24h, 0) AS failed_24h, COALESCE(o.completed_24h, 0) AS completed_24h,
       pg_catalog.now() - o.oldest_pending AS oldest_pending_age
  FROM t LEFT JOIN o ON o.effect_type = t.effect_type;
COMMENT ON VIEW idemgate.effect_types IS
'One row per effect type with effects, an endpoint or a pause: whether it has an endpoint and is paused, its backlog (pending, due, sending, unknown), effects failed and completed in the last 24 hours, and the age of its oldest pending effect';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.pause_effect_type(text,text,text)'),
    ('operator', 'idemgate.resume_effect_type(text,text)'),
    ('operator', 'idemgate.unregister_endpoint(text,text)'),
    ('operator', 'idemgate.cancel_effect(uuid,text,text)'),
    ('operator', 'idemgate.cancel_approval(uuid,text,text)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.effect_types'),
    ('operator', 'idemgate.effect_types'),
    ('operator', 'idemgate.paused_effect_types');

-- Nothing new is executable by PUBLIC; roles that already hold a bundle
-- (granted under 1.0) get its new members, as grant_role would give them.
REVOKE EXECUTE ON FUNCTION idemgate.pause_effect_type(text, text, text),
                          idemgate.resume_effect_type(text, text),
                          idemgate.unregister_endpoint(text, text),
                          idemgate.cancel_effect(uuid, text, text),
                          idemgate.cancel_approval(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON idemgate.effect_types FROM PUBLIC;
DO $$
DECLARE g record;
BEGIN
  FOR g IN SELECT gb.role::text AS role, m.fn, m.rel::text AS rel
             FROM idemgate.granted_bundles gb
             JOIN idemgate.bundle_members m ON m.bundle = gb.bundle
            WHERE m.fn IN ('idemgate.pause_effect_type(text,text,text)',
                           'idemgate.resume_effect_type(text,text)',
                           'idemgate.unregister_endpoint(text,text)',
                           'idemgate.cancel_effect(uuid,text,text)',
                           'idemgate.cancel_approval(uuid,text,text)')
               OR m.rel IN ('idemgate.effect_types'::regclass, 'idemgate.paused_effect_types'::regclass)
  LOOP
    IF g.fn IS NOT NULL THEN
      EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', g.fn, g.role);
    ELSE
      EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %s', g.rel, g.role);
    END IF;
  END LOOP;
END $$;
