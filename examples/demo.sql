-- examples/demo.sql — what idemgate does, in the order a workflow meets it.
\set ON_ERROR_STOP 0
\set VERBOSITY terse
\pset footer off
CREATE EXTENSION idemgate;

\echo
\echo '1. The webhook for invoice 4471 arrives: the first call claims the key.'
SELECT outcome, state, version FROM idemgate.claim('invoice-2026-0918-ACME-4471',
  '{"customer": "ACME", "amount": 129.50}', '5 minutes', 'invoices') \gset first_
\echo '   outcome: ' :first_outcome ', state: ' :first_state
SELECT lease_owner AS owner FROM idemgate.runs WHERE idempotency_key = 'invoice-2026-0918-ACME-4471' \gset

\echo
\echo '2. The workflow finishes and records its result (compare-and-set as the owner).'
SELECT idemgate.cas_transition('invoice-2026-0918-ACME-4471', :'owner', 0, 'completed',
  '{"invoice_id": "INV-77", "model": "local-llm", "workflow_version": "v3"}') AS new_version;

\echo
\echo '3. The same webhook is delivered again: a duplicate, answered with the stored result.'
SELECT outcome, state, result FROM idemgate.claim('invoice-2026-0918-ACME-4471',
  '{"customer": "ACME", "amount": 129.50}');

\echo
\echo '4. Same key, different payload: refused with IG001 (nothing changes).'
SELECT * FROM idemgate.claim('invoice-2026-0918-ACME-4471', '{"customer": "ACME", "amount": 999}');
\echo '   SQLSTATE' :LAST_ERROR_SQLSTATE

\echo
\echo '5. A worker crashes holding a 1-second lease; the next delivery recovers the run.'
SELECT outcome FROM idemgate.claim('lead-555', '{"email": "ana@example.com"}', '1 second', 'leads');
\o /dev/null
SELECT pg_sleep(1.2);
\o
SELECT outcome, state, version FROM idemgate.claim('lead-555', '{"email": "ana@example.com"}');

\echo
\echo '6. A reply drafted by the model needs a human. The email endpoint is registered'
\echo '   by an operator; the approval token is returned once, only its hash is stored.'
\o /dev/null
SELECT idemgate.register_endpoint('email', :'sink' || '/ok', '5 seconds', 3, false, '{}', 'id');
\o
SELECT lease_owner AS mail_owner FROM idemgate.claim('ticket-42-reply',
  '{"ticket": 42, "customer": "ana@example.com"}', '5 minutes', 'support') \gset
SELECT token, approval_id FROM idemgate.request_approval('ticket-42-reply', :'mail_owner', 0,
  '{"type": "email", "target": "ana@example.com", "payload": {"subject": "Re: ticket 42", "body": "Hola Ana ..."}}',
  '1 hour', '{"source": "https://helpdesk.example/tickets/42", "model": "local-llm", "draft": "Hola Ana ..."}',
  NULL, 'n8n-support-bot') \gset
SELECT length(:'token') AS token_chars,
       (SELECT count(*) FROM idemgate.approvals WHERE token_hash = idemgate.hash_token(:'token')) AS stored_as_hash;
\echo '   The GET confirmation page only peeks:'
SELECT status, card->>'source' AS source FROM idemgate.peek_approval(:'token');

\echo
\echo '7. The approver POSTs "approve": one transaction consumes the token, approves the run'
\echo '   and inserts the email into the outbox. The same link used again is invalid.'
SELECT outcome, array_length(effect_ids, 1) AS effects FROM idemgate.consume_approval(:'token', 'approve', 'maria@example.com');
SELECT outcome FROM idemgate.consume_approval(:'token', 'approve', 'maria@example.com');

\echo
\echo '8. The dispatcher (a background worker) POSTs it with Idempotency-Key = effect_id.'
\o /dev/null
SELECT pg_sleep(1);
\o
SELECT effect_type, target, state, attempts, provider_id IS NOT NULL AS has_provider_id FROM idemgate.outbox;
SELECT idempotency_key, state FROM idemgate.runs WHERE idempotency_key = 'ticket-42-reply';

\echo
\echo '9. An automatic CRM update whose endpoint answers 400: no retry, a dead letter instead.'
\o /dev/null
SELECT idemgate.register_endpoint('crm', :'sink' || '/status/400', '5 seconds', 3, false, '{}', 'id');
\o
SELECT lease_owner AS crm_owner FROM idemgate.claim('lead-555-crm', '{"lead": 555}', '5 minutes', 'leads') \gset
SELECT array_length(effect_ids, 1) AS effects FROM idemgate.enqueue_effect('lead-555-crm', :'crm_owner', 0,
  '{"type": "crm", "target": "lead/555", "payload": {"stage": "qualified"}}');
\o /dev/null
SELECT pg_sleep(1);
\o
SELECT kind, idempotency_key, error_class, attempts, payload FROM idemgate.dead_letters WHERE kind = 'effect';

\echo
\echo '10. The kill switch: while it is off nothing is sent; queued effects wait, then go.'
\o /dev/null
SELECT idemgate.set_actions_enabled(false, 'oncall@example.com', 'demo: provider incident');
\o
SELECT lease_owner AS hold_owner FROM idemgate.claim('ticket-43-reply', '{"ticket": 43}', '5 minutes', 'support') \gset
SELECT array_length(effect_ids, 1) AS effects FROM idemgate.enqueue_effect('ticket-43-reply', :'hold_owner', 0,
  '{"type": "email", "target": "luis@example.com", "payload": {"subject": "Re: ticket 43"}}');
\o /dev/null
SELECT pg_sleep(1);
\o
SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'ticket-43-reply';
\o /dev/null
SELECT idemgate.set_actions_enabled(true, 'oncall@example.com', 'demo: incident over');
\o
\o /dev/null
SELECT pg_sleep(1);
\o
SELECT target, state FROM idemgate.outbox WHERE idempotency_key = 'ticket-43-reply';

\echo
\echo 'Figures (idemgate.metrics) and alerts:'
SELECT claims, duplicates, round(duplicate_rate::numeric, 2) AS duplicate_rate, recovered,
       human_approved, auto_approved, retry_exhausted, dead_letters_open, actions_enabled
  FROM idemgate.metrics();
SELECT alert, severity, message FROM idemgate.alerts;

\echo
\echo 'What the ledger recorded, key by key:'
SELECT idempotency_key, kind, details FROM idemgate.key_history ORDER BY at;
