-- Stored results (docs/n8n.md): a run that completes through its effects and
-- has no result of its own gets {"effects": [...]}, and claim answers later
-- duplicates with it. Effect types are unique to this file and have no
-- endpoint, so the pull API delivers them (no dispatcher involved).
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

-- Scenario 1: two effects, completed one by one. The first completion
-- leaves the run approved with no result; the last completes it and stores
-- the summary, in (effect_type, target) order, with the provider ids.
SELECT lease_owner AS owner, version FROM idemgate.claim('stored-1', '{"ticket": 1}') \gset
SELECT array_length(effect_ids, 1) AS enqueued FROM idemgate.enqueue_effect('stored-1', :'owner', :version,
  '[{"type": "stored_mail", "target": "b@example.com", "payload": {"n": 2}},
    {"type": "stored_mail", "target": "a@example.com", "payload": {"n": 1}}]');
CREATE TEMP TABLE got AS SELECT * FROM idemgate.claim_effects('stored_mail', 10);
SELECT count(*) AS claimed FROM got;
SELECT idemgate.complete_effect(effect_id, lease_owner, 'prov-a') AS first_completed
FROM got WHERE target = 'a@example.com';
SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'stored-1';
SELECT idemgate.complete_effect(effect_id, lease_owner, NULL) AS last_completed
FROM got WHERE target = 'b@example.com';
-- The summary names every effect exactly as the outbox holds it.
SELECT r.state,
       jsonb_array_length(r.result->'effects') AS effects,
       (SELECT jsonb_agg(e - 'effect_id') FROM jsonb_array_elements(r.result->'effects') e) AS summary,
       (SELECT bool_and((e->>'effect_id')::uuid = o.effect_id)
          FROM jsonb_array_elements(r.result->'effects') e
          JOIN idemgate.outbox o ON o.idempotency_key = r.idempotency_key AND o.target = e->>'target') AS ids_match
FROM idemgate.runs r WHERE r.idempotency_key = 'stored-1';
-- A later duplicate gets it from claim, in both forms.
SELECT outcome, state, lease_owner, result->'effects'->0->>'target' AS first_target,
       result->'effects'->0->>'provider_id' AS provider_id
FROM idemgate.claim('stored-1', '{"ticket": 1}');
SELECT outcome, jsonb_array_length(result->'effects') AS effects
FROM idemgate.claim('{"key": "stored-1", "payload": {"ticket": 1}}'::jsonb);

-- Scenario 2: a run that failed (fail() records its error as the result),
-- was recovered and then completed through its effect: the stale failure
-- record is replaced by the effects summary.
SELECT lease_owner AS owner, version FROM idemgate.claim('stored-2', '{"ticket": 2}') \gset
SELECT idemgate.fail('stored-2', :'owner', :version, 'model_timeout', 'slow', true) AS failed;
SELECT result ? 'error_class' AS failure_recorded FROM idemgate.runs WHERE idempotency_key = 'stored-2';
SELECT outcome, lease_owner AS owner, version FROM idemgate.claim('stored-2', '{"ticket": 2}') \gset
SELECT :'outcome' AS outcome;
SELECT array_length(effect_ids, 1) AS enqueued FROM idemgate.enqueue_effect('stored-2', :'owner', :version,
  '{"type": "stored_hook", "target": "crm", "payload": {}}');
SELECT idemgate.complete_effect(effect_id, lease_owner, 'crm-77') AS completed
FROM idemgate.claim_effects('stored_hook', 10);
SELECT state, result->'effects'->0->>'provider_id' AS provider_id, result ? 'error_class' AS stale
FROM idemgate.runs WHERE idempotency_key = 'stored-2';

-- Scenario 3: an effect settled by an operator (resolve_effect after an
-- unknown outcome) completes the run the same way, with its state.
SELECT lease_owner AS owner, version FROM idemgate.claim('stored-3', '{"ticket": 3}') \gset
SELECT array_length(effect_ids, 1) AS enqueued FROM idemgate.enqueue_effect('stored-3', :'owner', :version,
  '{"type": "stored_sms", "target": "+34600000000", "payload": {}}');
SELECT idemgate.fail_effect(effect_id, lease_owner, 'timeout_after_send', 'no answer') AS after_timeout
FROM idemgate.claim_effects('stored_sms', 10);
SELECT state, result FROM idemgate.runs WHERE idempotency_key = 'stored-3';
SELECT idemgate.resolve_effect(effect_id, true, 'oncall', 'sms-9', 'provider confirmed') AS resolved
FROM idemgate.outbox WHERE idempotency_key = 'stored-3';
SELECT outcome, state, result->'effects'->0->>'state' AS effect_state,
       result->'effects'->0->>'provider_id' AS provider_id
FROM idemgate.claim('stored-3', '{"ticket": 3}');

-- Scenario 4: a run completed by its owner with a result of its own keeps
-- it (no effects involved).
SELECT lease_owner AS owner, version FROM idemgate.claim('stored-4', '{"ticket": 4}') \gset
SELECT idemgate.cas_transition('stored-4', :'owner', :version, 'completed', '{"answer": 42}') IS NOT NULL AS done;
SELECT outcome, result FROM idemgate.claim('stored-4', '{"ticket": 4}');
