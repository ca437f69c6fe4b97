-- The reference sequence through idemgate: claim → request_approval →
-- consume_approval, three calls (three transactions), the token passed on.
\set n random(1, 9000000000000000000)
SELECT lease_owner AS owner, version AS v
  FROM idemgate.claim('seq-' || :n, '{"order": 4471, "customer": "ACME", "amount": 129.5}') \gset
SELECT token AS tok
  FROM idemgate.request_approval('seq-' || :n, :owner, :v,
       '{"type": "mail", "target": "customer-4471", "payload": {"subject": "Refund approved"}}') \gset
SELECT outcome FROM idemgate.consume_approval(:tok, 'approve', 'alice@example.com');
