-- idemgate.claim(request jsonb), n8n's one-parameter form, on a new key,
-- same payload as claim.sql.
\set n random(1, 9000000000000000000)
SELECT * FROM idemgate.claim(jsonb_build_object('key', 'bench-' || :n,
        'payload', '{"order": 4471, "customer": "ACME", "amount": 129.5, "lines": [1, 2, 3]}'::jsonb));
