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
SELECT pg_sleep(1.2);
SELECT outcome, state, version FROM idemgate.claim('lead-555', '{"email": "ana@example.com"}');

\echo
\echo 'What the ledger recorded, key by key:'
SELECT idempotency_key, kind, details FROM idemgate.key_history ORDER BY at;
