
-- Runs: the idempotency ledger (src/runs.c).

CREATE FUNCTION idemgate.claim(key text, payload jsonb, lease interval DEFAULT '5 minutes',
                               workflow text DEFAULT NULL, owner uuid DEFAULT NULL)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim';
COMMENT ON FUNCTION idemgate.claim(text, jsonb, interval, text, uuid) IS
'Atomically claim an idempotency key: claimed (new key), recovered (retryable or expired lease taken over) or duplicate (earlier state and result); IG001 when the payload differs';

CREATE FUNCTION idemgate.claim(request jsonb)
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_request';
COMMENT ON FUNCTION idemgate.claim(jsonb) IS
'claim() with its arguments in one JSON object {key, payload, lease, workflow, owner}: the robust form for n8n''s Postgres node';

CREATE FUNCTION idemgate.claim_lease(key text, payload_hash bytea, owner uuid, lease interval)
RETURNS TABLE(idempotency_key text, lease_owner uuid, version bigint)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_claim_lease';
COMMENT ON FUNCTION idemgate.claim_lease(text, bytea, uuid, interval) IS
'The single atomic claim statement: one row when claimed or recovered, none when the key is busy or finished';

CREATE FUNCTION idemgate.hash_payload(payload jsonb) RETURNS bytea
LANGUAGE C IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'idemgate_hash_payload';
COMMENT ON FUNCTION idemgate.hash_payload(jsonb) IS
'SHA-256 of the payload''s canonical jsonb text; equals sha256(convert_to(payload::text, ''UTF8''))';

CREATE FUNCTION idemgate.cas_transition(key text, owner uuid, version bigint, new_state text,
                                        result jsonb DEFAULT NULL) RETURNS bigint
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_cas_transition';
COMMENT ON FUNCTION idemgate.cas_transition(text, uuid, bigint, text, jsonb) IS
'Compare-and-set a run''s state as its live lease owner; returns the new version, NULL when ownership was lost, IG002 for an illegal transition';

CREATE FUNCTION idemgate.renew_lease(key text, owner uuid, version bigint, extend_by interval)
RETURNS timestamptz
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_renew_lease';
COMMENT ON FUNCTION idemgate.renew_lease(text, uuid, bigint, interval) IS
'Extend a live lease to now() + extend_by; NULL when not the owner or past idemgate.max_lease_life';

CREATE FUNCTION idemgate.fail(key text, owner uuid, version bigint, error_class text, error text,
                              retryable boolean) RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail';
COMMENT ON FUNCTION idemgate.fail(text, uuid, bigint, text, text, boolean) IS
'Record a failure as the live owner: failed_retryable, or failed_terminal plus a dead letter once idemgate.max_run_attempts is reached or when not retryable';

CREATE FUNCTION idemgate.supersede(original_key text, new_key text, payload jsonb, operator text,
                                   reason text, lease interval DEFAULT '5 minutes')
RETURNS TABLE(outcome text, idempotency_key text, state text, lease_owner uuid, version bigint, result jsonb)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_supersede';
COMMENT ON FUNCTION idemgate.supersede(text, text, jsonb, text, text, interval) IS
'Replay a finished run under a new key linked to the original, recording operator and reason; the original is never modified';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.claim(text,jsonb,interval,text,uuid)'),
    ('client', 'idemgate.claim(jsonb)'),
    ('client', 'idemgate.claim_lease(text,bytea,uuid,interval)'),
    ('client', 'idemgate.hash_payload(jsonb)'),
    ('client', 'idemgate.cas_transition(text,uuid,bigint,text,jsonb)'),
    ('client', 'idemgate.renew_lease(text,uuid,bigint,interval)'),
    ('client', 'idemgate.fail(text,uuid,bigint,text,text,boolean)'),
    ('operator', 'idemgate.supersede(text,text,jsonb,text,text,interval)');

-- A first claim is recorded by the run row itself (see src/runs.c); this
-- view shows it together with the events as one timeline per key.
CREATE VIEW idemgate.key_history AS
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key)) AS details
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL;
COMMENT ON VIEW idemgate.key_history IS
'Everything that happened to each key: its first claim (from runs) and every event, for "did we process this key?"';
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES ('reader', 'idemgate.key_history');
