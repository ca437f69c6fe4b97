-- Status URLs (SPEC §22; src/policy/status_url.c, src/policy/endpoints.c): what
-- register_endpoint accepts as status_url, what it stores and audits, and
-- what it refuses (22023, nothing written). The look-ups themselves run in
-- test/t/157_reconcile_status.pl against a loopback provider. pgTAP.
\i test/sql/include/pgtap.psql
SELECT * FROM no_plan();

-- Accepted: {effect_id}, optionally {provider_id}, anywhere in the URL.
SELECT lives_ok($$SELECT idemgate.register_endpoint('su_mail', 'http://127.0.0.1:9/send',
                    status_url => 'http://127.0.0.1:9/v1/messages?idempotency_key={effect_id}')$$,
                'a status URL with {effect_id}');
SELECT lives_ok($$SELECT idemgate.register_endpoint('su_crm', 'http://127.0.0.1:9/crm',
                    status_url => 'http://127.0.0.1:9/v1/{provider_id}/by-key/{effect_id}')$$,
                'with {provider_id} too');
SELECT lives_ok($$SELECT idemgate.register_endpoint('su_none', 'http://127.0.0.1:9/none')$$,
                'without one (the default)');
SELECT results_eq($$SELECT effect_type, status_url FROM idemgate.endpoints WHERE effect_type LIKE 'su\_%' ORDER BY 1$$,
                  $$VALUES ('su_crm', 'http://127.0.0.1:9/v1/{provider_id}/by-key/{effect_id}'),
                           ('su_mail', 'http://127.0.0.1:9/v1/messages?idempotency_key={effect_id}'),
                           ('su_none', NULL)$$,
                  'the templates are stored as given');
-- Audited like the url: scheme and host fingerprint, never the path or query.
SELECT results_eq($$SELECT details->'status_url' ? 'scheme', details->'status_url' ? 'host_sha256',
                           details::text LIKE '%messages%' OR details::text LIKE '%127.0.0.1%'
                      FROM idemgate.events WHERE kind = 'endpoint_registered'
                       AND details->>'effect_type' = 'su_mail'$$,
                  $$VALUES (true, true, false)$$,
                  'endpoint_registered keeps the status URL''s scheme and host fingerprint only');
-- Registering again without it removes it (create or replace).
SELECT idemgate.register_endpoint('su_crm', 'http://127.0.0.1:9/crm') \g /dev/null
SELECT is((SELECT status_url FROM idemgate.endpoints WHERE effect_type = 'su_crm'), NULL,
          'registered again without status_url: none');

-- Refused, 22023, nothing written.
SELECT throws_ok(q, '22023', m, q) FROM (VALUES
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'http://127.0.0.1:9/v1/messages')$$,
   'argument "status_url" is not allowed: it does not name {effect_id} (the look-up asks about one effect, by the Idempotency-Key it was sent with)'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'http://127.0.0.1:9/v1/{id}/{effect_id}')$$,
   'argument "status_url" is not allowed: it has a brace that is not one of the placeholders {effect_id} and {provider_id} (write a literal brace as %7B or %7D)'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'http://127.0.0.1:9/v1/{effect_id}}')$$,
   'argument "status_url" is not allowed: it has a brace that is not one of the placeholders {effect_id} and {provider_id} (write a literal brace as %7B or %7D)'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'ftp://127.0.0.1/{effect_id}')$$,
   'argument "status_url" is not allowed: its scheme is ftp; only https (or http to allowed hosts) is allowed'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'http://api.example.com/{effect_id}')$$,
   'argument "status_url" is not allowed: plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to api.example.com'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'https://10.1.2.3/{effect_id}')$$,
   'argument "status_url" is not allowed: destination address 10.1.2.3 is private-use; only hosts listed in idemgate.allowed_http_hosts may be non-public'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'https://user:pw@api.example.com/{effect_id}')$$,
   'argument "status_url" is not allowed: it contains user information; put credentials in the endpoint''s headers instead'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => '{effect_id}')$$,
   NULL),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => 'https://api.example.com/' || repeat('a', 2100) || '{effect_id}')$$,
   'argument "status_url" must be between 1 and 2048 bytes long, not 2135'),
  ($$SELECT idemgate.register_endpoint('su_bad', 'http://127.0.0.1:9/x', status_url => '')$$,
   'argument "status_url" must be between 1 and 2048 bytes long, not 0')
) AS t(q, m);
SELECT is_empty($$SELECT * FROM idemgate.endpoints WHERE effect_type = 'su_bad'$$, 'nothing registered');
SELECT is_empty($$SELECT * FROM idemgate.events WHERE details->>'effect_type' = 'su_bad'$$, 'nothing audited');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
