-- sql/1.1--1.2/40_effect_policies.sql
--
-- Policy per effect type, enforced by the database (src/effect_policies.c;
-- README.md "Effect policies", docs/outbox.md): an operator says which
-- effect types only a human may let out (requires_approval), whose
-- approval requests must name a requester and an audience
-- (requires_requester), what fraction of automatic enqueue_effect calls is
-- turned into an approval request instead (review_sample), and how long
-- automatic effects wait while an approver may still cancel them
-- (cancel_window).

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

CREATE VIEW idemgate.effect_policies AS
SELECT effect_type, requires_approval, requires_requester, review_sample, cancel_window,
       reviews_requested, updated_at, updated_by
  FROM idemgate.effect_type_policies;
COMMENT ON VIEW idemgate.effect_policies IS
'The policy of each effect type that has one (set_effect_policy), with how many enqueue_effect calls its review_sample turned into approval requests';
REVOKE ALL ON idemgate.effect_policies FROM PUBLIC;

CREATE FUNCTION idemgate.set_effect_policy(effect_type text,
                                           requires_approval boolean DEFAULT false,
                                           requires_requester boolean DEFAULT false,
                                           review_sample real DEFAULT 0,
                                           cancel_window interval DEFAULT NULL,
                                           actor text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_effect_policy';
COMMENT ON FUNCTION idemgate.set_effect_policy(text, boolean, boolean, real, interval, text) IS
'Set the policy of an effect type (all defaults = no restriction): requires_approval, requires_requester, review_sample (0..1), cancel_window; audited with actor (default: the calling role). Takes effect for every enqueue_effect and request_approval that starts after it commits';
REVOKE ALL ON FUNCTION idemgate.set_effect_policy(text, boolean, boolean, real, interval, text) FROM PUBLIC;

-- Cancel windows. An automatic effect of a type with a cancel_window is not
-- due before cancel_until (its not_before); until then an approver may
-- cancel it. NULL for every other effect.
ALTER TABLE idemgate.outbox ADD COLUMN cancel_until timestamptz;
COMMENT ON COLUMN idemgate.outbox.cancel_until IS
'End of the cancel window of an automatic effect whose type has a cancel_window (it is not due before then); an approver may cancel it with cancel_in_window until then. NULL otherwise';

-- The effects an approver may still cancel: pending, inside their window.
-- A window only comes from a policy (whose row set_effect_policy never
-- deletes), and an effect in its window is not due yet, so the look-up is
-- outbox_due_idx per policy type, never a scan of the whole outbox.
CREATE VIEW idemgate.cancel_windows AS
SELECT o.effect_id, o.idempotency_key, o.effect_type, o.target, o.payload, o.cancel_until, o.created_at
  FROM idemgate.effect_type_policies p
  JOIN idemgate.outbox o ON o.effect_type = p.effect_type
 WHERE o.state = 'pending'
   AND o.next_attempt_at > pg_catalog.now()
   AND o.cancel_until > pg_catalog.now();
COMMENT ON VIEW idemgate.cancel_windows IS
'Automatic effects still inside their cancel window (effect type policy cancel_window): pending, not due before cancel_until; an approver may cancel them with cancel_in_window';
REVOKE ALL ON idemgate.cancel_windows FROM PUBLIC;

CREATE FUNCTION idemgate.cancel_in_window(effect_id uuid, approver text, reason text DEFAULT NULL)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window';
COMMENT ON FUNCTION idemgate.cancel_in_window(uuid, text, text) IS
'An approver cancels an automatic effect inside its cancel window (pending, before cancel_until): cancelled, never sent, no dead letter; audited with the approver. IG002 once the window has closed or for an effect without one, IG003 for an unknown effect';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(uuid, text, text) FROM PUBLIC;

CREATE FUNCTION idemgate.cancel_in_window(request jsonb)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cancel_in_window_request';
COMMENT ON FUNCTION idemgate.cancel_in_window(jsonb) IS
'cancel_in_window() with its arguments in one JSON object {effect_id, approver, reason}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.cancel_in_window(jsonb) FROM PUBLIC;

-- enqueue_effect's result says when the call was turned into a review:
-- effect_ids and version keep their meaning (effect_ids is empty, nothing
-- was enqueued; version is the run's new one, awaiting_human), and a new
-- last column review_requested is NULL, or {"approval_id", "token",
-- "expires_at", "effect_types", "review_sample"} for a sampled review.
-- The result type changes, so both forms are made again (roles holding a
-- bundle get EXECUTE back in 99_release_grants.sql; bundle_members names
-- them by signature, which does not change).
DROP FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb);
CREATE FUNCTION idemgate.enqueue_effect(key text, owner uuid, version bigint, effects jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect';
COMMENT ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) IS
'The automatic path: as the live owner of a processing run, insert its effects into the outbox and approve the run in one step; effect ids (existing ones for an already enqueued (key, type, target)) and the new version, or a row of NULLs when ownership was lost. Effect policies apply: 42501 for a type that requires approval; a call sampled for review moves the run to awaiting_human instead and returns no effect ids and review_requested = {approval_id, token, expires_at, effect_types, review_sample}';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(text, uuid, bigint, jsonb) FROM PUBLIC;

DROP FUNCTION idemgate.enqueue_effect(jsonb);
CREATE FUNCTION idemgate.enqueue_effect(request jsonb)
RETURNS TABLE(effect_ids uuid[], version bigint, review_requested jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_enqueue_effect_request';
COMMENT ON FUNCTION idemgate.enqueue_effect(jsonb) IS
'enqueue_effect() with its arguments in one JSON object {key, owner, version, effects}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.enqueue_effect(jsonb) FROM PUBLIC;

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.set_effect_policy(text,boolean,boolean,real,interval,text)'),
    ('approver', 'idemgate.cancel_in_window(uuid,text,text)'),
    ('operator', 'idemgate.cancel_in_window(uuid,text,text)'),
    ('approver', 'idemgate.cancel_in_window(jsonb)'),
    ('operator', 'idemgate.cancel_in_window(jsonb)');
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.effect_policies'),
    ('operator', 'idemgate.effect_policies'),
    ('operator', 'idemgate.effect_type_policies'),
    ('approver', 'idemgate.cancel_windows'),
    ('operator', 'idemgate.cancel_windows');
