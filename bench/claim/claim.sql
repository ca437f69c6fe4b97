-- idemgate.claim on a new key, same payload as baseline.sql.
\set n random(1, 9000000000000000000)
SELECT * FROM idemgate.claim('bench-' || :n,
        '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb);
