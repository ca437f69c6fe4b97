-- register_endpoint: URL checks (libcurl's parser; https always, http only
-- to idemgate.allowed_http_hosts, default localhost,127.0.0.1,::1), header
-- checks, upsert, audit without header values, operator-only access.
-- No effects of these types exist, so a dispatcher has nothing to send.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- url(u) tries to register u for a throw-away type inside a rolled-back call.
CREATE FUNCTION pg_temp.url(u text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idemgate.register_endpoint('endpoints_url_probe', u);
  RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'accepted';
EXCEPTION WHEN OTHERS THEN
  RETURN CASE WHEN SQLERRM = 'accepted' THEN 'ok' ELSE SQLSTATE || ': ' || SQLERRM END;
END $$;

SHOW idemgate.allowed_http_hosts;
SELECT u, pg_temp.url(u) FROM unnest(ARRAY[
  'https://api.example.com/v1/hooks?x=1',
  'HTTPS://API.EXAMPLE.COM/',
  'https://10.0.0.5:8443/internal',
  'http://localhost:8080/hook',
  'http://LocalHost/hook',
  'http://127.0.0.1:9/x',
  'http://[::1]:8080/x',
  'http://example.com/hook',
  'http://127.0.0.2/x',
  'http://localhost.evil.com/x',
  'ftp://files.example.com/x',
  'file:///etc/passwd',
  'gopher://localhost/x',
  'javascript:alert(1)',
  'https://user:secret@api.example.com/',
  'https://user@api.example.com/',
  'http://user@localhost/',
  'not a url',
  '//api.example.com/x',
  'api.example.com/x',
  'https://',
  'https://exa mple.com/',
  E'https://example.com/\r\nX-Injected: 1'
]) AS u;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', '')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint(NULL, 'https://example.com/')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('', 'https://example.com/')$$);

-- timeout, max_attempts and provider_id_field
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '0 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '5 min 1 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 0)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 101)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, false, '{}', NULL)$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_t', 'https://example.com/', '10 s', 3, false, '{}', '')$$);

-- headers: an object of string values, token names, no CR/LF, no reserved
-- or duplicate names
SELECT h, pg_temp.sqlstate_of(format(
  'SELECT idemgate.register_endpoint(%L, %L, %L, 3, false, %L)',
  'endpoints_h', 'https://example.com/', '10 s', h)) AS outcome
FROM unnest(ARRAY[
  NULL,
  '[]',
  '"x"',
  '{"Authorization": 42}',
  '{"Authorization": null}',
  '{"X-Bad Name": "v"}',
  '{"X-Colon:": "v"}',
  '{"": "v"}',
  '{"X-Token": "a\r\nX-Injected: 1"}',
  '{"X-Token": "a\nb"}',
  '{"X-Token": "a\u0007b"}',
  '{"Content-Type": "text/plain"}',
  '{"idempotency-key": "fixed"}',
  '{"HOST": "evil.example"}',
  '{"Content-Length": "0"}',
  '{"Transfer-Encoding": "chunked"}',
  '{"X-A": "1", "x-a": "2"}',
  '{"Authorization": "Bearer s3cr3t", "X-Tenant": "acme\tco"}'
]::jsonb[]) AS h;

-- Upsert: a second registration replaces the first; the audit event names
-- scheme and host and the header names, never their values nor the path.
SELECT idemgate.register_endpoint('endpoints_mail', 'https://mail.example.com/send/tok_XYZ?key=abc', '20 seconds', 5,
                                  true, '{"Authorization": "Bearer s3cr3t-1", "X-Tenant": "acme"}', 'message_id');
SELECT effect_type, url, timeout, max_attempts, honors_idempotency_key, headers, provider_id_field,
       created_at = updated_at AS fresh
FROM idemgate.endpoints WHERE effect_type = 'endpoints_mail';
SELECT idemgate.register_endpoint('endpoints_mail', 'http://localhost:8025/send');
SELECT effect_type, url, timeout, max_attempts, honors_idempotency_key, headers, provider_id_field
FROM idemgate.endpoints WHERE effect_type = 'endpoints_mail';
SELECT kind, actor = session_user AS actor_ok, details FROM idemgate.events
WHERE kind = 'endpoint_registered' AND details->>'effect_type' = 'endpoints_mail' ORDER BY id;
SELECT count(*) AS leaked FROM idemgate.events
WHERE kind = 'endpoint_registered' AND (details::text LIKE '%s3cr3t%' OR details::text LIKE '%tok_XYZ%'
                                        OR details::text LIKE '%acme%');
-- The probe registrations above were all rolled back.
SELECT count(*) FROM idemgate.endpoints WHERE effect_type IN ('endpoints_url_probe', 'endpoints_t');

-- Privileges: only operators register endpoints or read the table (headers
-- can hold secrets); clients and readers get 42501.
CREATE ROLE regress_endpoints_client;
CREATE ROLE regress_endpoints_reader;
CREATE ROLE regress_endpoints_operator;
SELECT idemgate.grant_role('regress_endpoints_client', 'client');
SELECT idemgate.grant_role('regress_endpoints_reader', 'reader');
SELECT idemgate.grant_role('regress_endpoints_operator', 'operator');
-- (pulling a type needs its grant since 1.1: test/sql/pull_grants.sql)
SELECT idemgate.grant_effect_type('regress_endpoints_client', 'endpoints_none');
SET ROLE regress_endpoints_client;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_x', 'https://example.com/')$$);
SELECT pg_temp.sqlstate_of($$SELECT headers FROM idemgate.endpoints$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject(1, 'mallory')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject_all('mallory')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.resolve_effect(gen_random_uuid(), true, 'mallory')$$);
-- ...but may use the pull API
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('endpoints_none')$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.complete_effect(gen_random_uuid(), gen_random_uuid())$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'transport')$$);
RESET ROLE;
SET ROLE regress_endpoints_reader;
SELECT pg_temp.sqlstate_of($$SELECT headers FROM idemgate.endpoints$$);
SELECT pg_temp.sqlstate_of($$SELECT * FROM idemgate.claim_effects('endpoints_none')$$);
SELECT pg_temp.sqlstate_of($$SELECT count(*) FROM idemgate.dead_letters$$);
RESET ROLE;
SET ROLE regress_endpoints_operator;
SELECT pg_temp.sqlstate_of($$SELECT idemgate.register_endpoint('endpoints_op', 'https://op.example.com/')$$);
SELECT pg_temp.sqlstate_of($$SELECT count(*) FROM idemgate.endpoints$$);
SELECT pg_temp.sqlstate_of($$SELECT idemgate.reinject_all('op', 'endpoints_none')$$);
RESET ROLE;
SELECT kind, actor FROM idemgate.events
WHERE kind = 'endpoint_registered' AND details->>'effect_type' = 'endpoints_op';

-- Clean up.
SELECT idemgate.revoke_role('regress_endpoints_client', 'client');
SELECT idemgate.revoke_role('regress_endpoints_reader', 'reader');
SELECT idemgate.revoke_role('regress_endpoints_operator', 'operator');
DELETE FROM idemgate.granted_bundles WHERE role::text LIKE 'regress_endpoints_%';
SELECT idemgate.revoke_effect_type('regress_endpoints_client', 'endpoints_none');
DROP OWNED BY regress_endpoints_client, regress_endpoints_reader, regress_endpoints_operator;
DROP ROLE regress_endpoints_client;
DROP ROLE regress_endpoints_reader;
DROP ROLE regress_endpoints_operator;
DELETE FROM idemgate.endpoints WHERE effect_type LIKE 'endpoints_%';
