-- register_endpoint: URL checks (libcurl's parser; https always, http only
-- to idemgate.allowed_http_hosts, default localhost,127.0.0.1,::1), header
-- checks, upsert, audit without header values, operator-only access.
-- No effects of these types exist, so a dispatcher has nothing to send.
-- pgTAP.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
-- accepted(u) registers u for a throw-away type, then raises P0001
-- 'accepted' so that the registration is rolled back: throws_ok with
-- P0001 'accepted' shows the URL was accepted and leaves nothing behind.
CREATE FUNCTION pg_temp.accepted(u text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idemgate.register_endpoint('endpoints_url_probe', u);
  RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'accepted';
END $$;
-- shown(t): t with CR and LF spelled out, for test descriptions.
CREATE FUNCTION pg_temp.shown(t text) RETURNS text LANGUAGE sql AS $$
SELECT replace(replace(t, E'\r', '\r'), E'\n', '\n') $$;
SELECT * FROM no_plan();

SELECT is(current_setting('idemgate.allowed_http_hosts'), 'localhost,127.0.0.1,::1', 'allowed_http_hosts default');
-- Accepted URLs.
SELECT throws_ok(format('SELECT pg_temp.accepted(%L)', u), 'P0001', 'accepted', 'accepted: ' || u) FROM unnest(ARRAY[
  'https://api.example.com/v1/hooks?x=1',
  'HTTPS://API.EXAMPLE.COM/',
  'http://localhost:8080/hook',
  'http://LocalHost/hook',
  'http://127.0.0.1:9/x',
  'http://[::1]:8080/x'
]) AS u;
-- Refused URLs: 22023 with the reason.
SELECT throws_ok(format('SELECT idemgate.register_endpoint(%L, %L)', 'endpoints_url_probe', u), '22023',
                 'argument "url" is not allowed: ' || why, 'refused: ' || pg_temp.shown(u)) FROM (VALUES
  ('https://10.0.0.5:8443/internal', 'destination address 10.0.0.5 is private-use; only hosts listed in idemgate.allowed_http_hosts may be non-public'),
  ('http://example.com/hook', 'plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to example.com'),
  ('http://127.0.0.2/x', 'plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to 127.0.0.2'),
  ('http://localhost.evil.com/x', 'plain http is only allowed to hosts listed in idemgate.allowed_http_hosts, not to localhost.evil.com'),
  ('ftp://files.example.com/x', 'its scheme is ftp; only https (or http to allowed hosts) is allowed'),
  ('file:///etc/passwd', 'it has no scheme or no host'),
  ('gopher://localhost/x', 'its scheme is gopher; only https (or http to allowed hosts) is allowed'),
  ('javascript:alert(1)', 'it cannot be parsed as an absolute http or https URL (Unsupported URL scheme)'),
  ('https://user:secret@api.example.com/', $$it contains user information; put credentials in the endpoint's headers instead$$),
  ('https://user@api.example.com/', $$it contains user information; put credentials in the endpoint's headers instead$$),
  ('http://user@localhost/', $$it contains user information; put credentials in the endpoint's headers instead$$),
  ('not a url', 'it cannot be parsed as an absolute http or https URL (Bad scheme)'),
  ('//api.example.com/x', 'it cannot be parsed as an absolute http or https URL (Bad scheme)'),
  ('api.example.com/x', 'it cannot be parsed as an absolute http or https URL (Bad scheme)'),
  ('https://', 'it cannot be parsed as an absolute http or https URL (No host part in the URL)'),
  ('https://exa mple.com/', 'it cannot be parsed as an absolute http or https URL (Bad hostname)'),
  (E'https://example.com/\r\nX-Injected: 1', 'it cannot be parsed as an absolute http or https URL (Bad path)')
) AS t(u, why);
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.register_endpoint('endpoints_t', '')$$, '22023', 'argument "url" must be between 1 and 2048 bytes long, not 0'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', NULL)$$, '22004', 'argument "url" must not be NULL'),
  ($$SELECT idemgate.register_endpoint(NULL, 'https://example.com/')$$, '22004', 'argument "effect_type" must not be NULL'),
  ($$SELECT idemgate.register_endpoint('', 'https://example.com/')$$, '22023', 'argument "effect_type" must be between 1 and 200 bytes long, not 0'),
-- timeout, max_attempts and provider_id_field
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', NULL)$$, '22004', 'argument "timeout" must not be NULL'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '0 s')$$, '22023',
   'argument "timeout" must be greater than 0 s and at most 300 s'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '5 min 1 s')$$, '22023',
   'argument "timeout" must be greater than 0 s and at most 300 s'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', NULL)$$, '22004', 'argument "max_attempts" must not be NULL'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 0)$$, '22023',
   'argument "max_attempts" must be between 1 and 100, not 0'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 101)$$, '22023',
   'argument "max_attempts" must be between 1 and 100, not 101'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, NULL)$$, '22004',
   'argument "honors_idempotency_key" must not be NULL'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, false, '{}', NULL)$$, '22004',
   'argument "provider_id_field" must not be NULL'),
  ($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, false, '{}', '')$$, '22023',
   'argument "provider_id_field" must be between 1 and 200 bytes long, not 0')
) AS t(q, code, m);

-- headers: an object of string values, token names, no CR/LF, no reserved
-- or duplicate names
SELECT throws_ok(format('SELECT idemgate.register_endpoint(%L, %L, %L, 3, false, %L)', 'endpoints_h', 'https://example.com/', '10 s', h),
                 code, m, 'headers ' || coalesce(h::text, 'NULL')) FROM (VALUES
  (NULL::jsonb, '22004', 'argument "headers" must not be NULL'),
  ('[]', '22023', 'argument "headers" must be a JSON object'),
  ('"x"', '22023', 'argument "headers" must be a JSON object'),
  ('{"Authorization": 42}', '22023', 'argument "headers" values must be JSON strings'),
  ('{"Authorization": null}', '22023', 'argument "headers" values must be JSON strings'),
  ('{"X-Bad Name": "v"}', '22023', $$argument "headers" names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)$$),
  ('{"X-Colon:": "v"}', '22023', $$argument "headers" names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)$$),
  ('{"": "v"}', '22023', 'argument "headers" names must be 1 to 256 characters long'),
  ('{"X-Token": "a\r\nX-Injected: 1"}', '22023', 'argument "headers" values must not contain CR, LF or other control characters'),
  ('{"X-Token": "a\nb"}', '22023', 'argument "headers" values must not contain CR, LF or other control characters'),
  ('{"X-Token": "a\u0007b"}', '22023', 'argument "headers" values must not contain CR, LF or other control characters'),
  ('{"Content-Type": "text/plain"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ('{"idempotency-key": "fixed"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ('{"HOST": "evil.example"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ('{"Content-Length": "0"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ('{"Transfer-Encoding": "chunked"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  -- 1.3: Expect would make libcurl wait for a 100 Continue nobody promised.
  ('{"Expect": "100-continue"}', '22023',
   'argument "headers" may not set Content-Type, Idempotency-Key, Host, Content-Length, Transfer-Encoding or Expect; the dispatcher sets them'),
  ('{"X-A": "1", "x-a": "2"}', '22023', 'argument "headers" names must be unique regardless of case')
) AS t(h, code, m);
-- 1.3: an empty or zero port is refused (libcurl would use the scheme's
-- default: a port nobody wrote); a written port is kept.
SELECT throws_ok(format('SELECT idemgate.register_endpoint(%L, %L)', 'endpoints_p', u), '22023', m, 'port: ' || u)
  FROM (VALUES
  ('http://127.0.0.1:/x', 'argument "url" is not allowed: its port is empty; write the port, or leave out the colon'),
  ('https://example.com:/', 'argument "url" is not allowed: its port is empty; write the port, or leave out the colon'),
  ('https://example.com:0/x', 'argument "url" is not allowed: its port is 0'),
  ('https://example.com:000', 'argument "url" is not allowed: its port is 0'),
  ('https://[2001:db8::1]:0/x', 'argument "url" is not allowed: its port is 0'),
  ('https://user@example.com:/x', 'argument "url" is not allowed: it contains user information; put credentials in the endpoint''s headers instead')
) AS t(u, m);
SELECT lives_ok($$SELECT idemgate.register_endpoint('endpoints_p', 'https://example.com:8443/x?a=b:c')$$,
                'a written port (and a colon in the query) is accepted');
SELECT lives_ok($$SELECT idemgate.register_endpoint('endpoints_p6', 'https://[2606:4700::1111]/x')$$,
                'an IPv6 literal without a port is accepted');
SELECT lives_ok(format('SELECT idemgate.register_endpoint(%L, %L, %L, 3, false, %L)', 'endpoints_h', 'https://example.com/', '10 s',
                       '{"Authorization": "Bearer s3cr3t", "X-Tenant": "acme\tco"}'::jsonb),
                'headers with a tab in a value are accepted');

-- Upsert: a second registration replaces the first; the audit event names
-- scheme and host and the header names, never their values nor the path.
SELECT idemgate.register_endpoint('endpoints_mail', 'https://mail.example.com/send/tok_XYZ?key=abc', '20 seconds', 5,
                                  true, '{"Authorization": "Bearer s3cr3t-1", "X-Tenant": "acme"}', 'message_id') \g /dev/null
SELECT results_eq($$SELECT effect_type, url, timeout, max_attempts, honors_idempotency_key, headers, provider_id_field,
                           created_at = updated_at AS fresh
                      FROM idemgate.endpoints WHERE effect_type = 'endpoints_mail'$$,
                  $$VALUES ('endpoints_mail', 'https://mail.example.com/send/tok_XYZ?key=abc', '20 seconds'::interval, 5, true,
                            '{"X-Tenant": "acme", "Authorization": "Bearer s3cr3t-1"}'::jsonb, 'message_id', true)$$,
                  'registered as given');
SELECT idemgate.register_endpoint('endpoints_mail', 'http://localhost:8025/send') \g /dev/null
SELECT results_eq($$SELECT effect_type, url, timeout, max_attempts, honors_idempotency_key, headers, provider_id_field
                      FROM idemgate.endpoints WHERE effect_type = 'endpoints_mail'$$,
                  $$VALUES ('endpoints_mail', 'http://localhost:8025/send', '10 seconds'::interval, 3, false, '{}'::jsonb, 'id')$$,
                  'a second registration replaces the first (defaults)');
SELECT results_eq($$SELECT kind, actor = session_user AS actor_ok, details FROM idemgate.events
                     WHERE kind = 'endpoint_registered' AND details->>'effect_type' = 'endpoints_mail' ORDER BY id$$,
                  $$VALUES ('endpoint_registered', true, '{"scheme": "https", "created": true, "timeout_ms": 20000,
                             "effect_type": "endpoints_mail", "header_names": ["X-Tenant", "Authorization"], "max_attempts": 5,
                             "honors_idempotency_key": true}'::jsonb
                             || jsonb_build_object('host_sha256', left(encode(sha256('mail.example.com'), 'hex'), 16))),
                           ('endpoint_registered', true, '{"scheme": "http", "created": false, "timeout_ms": 10000,
                             "effect_type": "endpoints_mail", "header_names": [], "max_attempts": 3,
                             "honors_idempotency_key": false}'::jsonb
                             || jsonb_build_object('host_sha256', left(encode(sha256('localhost'), 'hex'), 16)))$$,
                  'audited: scheme, a fingerprint of the host (not the host: readers see events) and header names');
SELECT is_empty($$SELECT details FROM idemgate.events
                   WHERE kind = 'endpoint_registered' AND (details::text LIKE '%s3cr3t%' OR details::text LIKE '%tok_XYZ%'
                                                           OR details::text LIKE '%acme%')$$,
                'no header value or path in any audit event');
-- The probe registrations above were all rolled back.
SELECT is_empty($$SELECT effect_type FROM idemgate.endpoints WHERE effect_type IN ('endpoints_url_probe', 'endpoints_t')$$,
                'the probe registrations left nothing');

-- Privileges: only operators register endpoints or read the table (headers
-- can hold secrets); clients and readers get 42501.
CREATE ROLE regress_endpoints_client;
CREATE ROLE regress_endpoints_reader;
CREATE ROLE regress_endpoints_operator;
SELECT idemgate.grant_role('regress_endpoints_client', 'client'), idemgate.grant_role('regress_endpoints_reader', 'reader'),
       idemgate.grant_role('regress_endpoints_operator', 'operator') \g /dev/null
-- (pulling a type needs its grant since 1.1: test/sql/pull_grants.sql)
SELECT idemgate.grant_effect_type('regress_endpoints_client', 'endpoints_none') \g /dev/null
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', r, q), '42501', m, r || ': ' || q) FROM (VALUES
  ('regress_endpoints_client', $$SELECT idemgate.register_endpoint('endpoints_x', 'https://example.com/')$$,
   'permission denied for function register_endpoint'),
  ('regress_endpoints_client', $$SELECT headers FROM idemgate.endpoints$$, 'permission denied for table endpoints'),
  ('regress_endpoints_client', $$SELECT idemgate.reinject(1, 'mallory')$$, 'permission denied for function reinject'),
  ('regress_endpoints_client', $$SELECT idemgate.reinject_all('mallory')$$, 'permission denied for function reinject_all'),
  ('regress_endpoints_client', $$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'mallory')$$,
   'permission denied for function resolve_effect'),
  ('regress_endpoints_reader', $$SELECT headers FROM idemgate.endpoints$$, 'permission denied for table endpoints'),
  ('regress_endpoints_reader', $$SELECT * FROM idemgate.claim_effects('endpoints_none')$$, 'permission denied for function claim_effects')
) AS t(r, q, m);
-- ...but a client may use the pull API, a reader read dead letters, an
-- operator do all of it.
SELECT lives_ok(format('SELECT pg_temp.as_role(%L, %L)', r, q), r || ': ' || q) FROM (VALUES
  ('regress_endpoints_client', $$SELECT * FROM idemgate.claim_effects('endpoints_none')$$),
  ('regress_endpoints_client', $$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid())$$),
  ('regress_endpoints_client', $$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport')$$),
  ('regress_endpoints_reader', $$SELECT count(*) FROM idemgate.dead_letters$$),
  ('regress_endpoints_operator', $$SELECT idemgate.register_endpoint('endpoints_op', 'https://op.example.com/')$$),
  ('regress_endpoints_operator', $$SELECT count(*) FROM idemgate.endpoints$$),
  ('regress_endpoints_operator', $$SELECT idemgate.reinject_all('op', 'endpoints_none')$$)
) AS t(r, q);
SELECT results_eq($$SELECT kind, actor FROM idemgate.events
                     WHERE kind = 'endpoint_registered' AND details->>'effect_type' = 'endpoints_op'$$,
                  $$VALUES ('endpoint_registered', 'regress_endpoints_operator')$$, 'the operator''s registration is audited under its name');

-- Clean up.
SELECT idemgate.revoke_role('regress_endpoints_client', 'client'), idemgate.revoke_role('regress_endpoints_reader', 'reader'),
       idemgate.revoke_role('regress_endpoints_operator', 'operator') \g /dev/null
DELETE FROM idemgate.granted_bundles WHERE role::text LIKE 'regress_endpoints_%';
SELECT is(idemgate.revoke_effect_type('regress_endpoints_client', 'endpoints_none'), true, 'the pull grant is revoked');
DROP OWNED BY regress_endpoints_client, regress_endpoints_reader, regress_endpoints_operator;
DROP ROLE regress_endpoints_client;
DROP ROLE regress_endpoints_reader;
DROP ROLE regress_endpoints_operator;
DELETE FROM idemgate.endpoints WHERE effect_type LIKE 'endpoints_%';

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
