-- idemgate.claim on a key claimed before (live lease): outcome duplicate,
-- with the stored state and result, counted for the duplicate rate.
\set n random(1, 100000)
SELECT * FROM idemgate.claim('dup-' || :n,
        '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb, '1 hour');
