-- idemgate.claim on a new key (bench/citus/run.sh), the payload of bench/claim/claim.sql.
\set n random(1, 9000000000000000000)
SELECT * FROM idemgate.claim('bench-' || :n,
        '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb);
