-- Destinations (README.md, "Security"): a URL whose host is a numeric address in a
-- non-public range is refused by register_endpoint for every scheme,
-- https included, unless the host is listed in idemgate.allowed_http_hosts
-- (names are checked on the resolved address at connect time: TAP
-- test/t/110_destinations.pl). Before 1.1 "https" was always accepted.
-- Every probe registers inside a rolled-back call: nothing is ever sent.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE FUNCTION pg_temp.url(u text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idemgate.register_endpoint('ssrf_probe', u);
  RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'accepted';
EXCEPTION WHEN OTHERS THEN
  RETURN CASE WHEN SQLERRM = 'accepted' THEN 'ok' ELSE SQLSTATE || ': ' || SQLERRM END;
END $$;

-- The loopback names are listed by default; list only a name here.
-- (ALTER SYSTEM: the setting is SIGHUP; restored at the end.)
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'sink.example';
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SHOW idemgate.allowed_http_hosts;
SELECT u, pg_temp.url(u) FROM unnest(ARRAY[
  'https://10.0.0.1/',
  'https://10.255.255.255:8443/x',
  'https://172.16.0.1/',
  'https://172.31.255.254/',
  'https://192.168.1.1/',
  'https://127.0.0.1/',
  'https://127.1/',
  'https://2130706433/',
  'https://0x7f.0.0.1/',
  'https://0.0.0.0/',
  'https://169.254.169.254/latest/meta-data/',
  'https://100.64.0.1/',
  'https://100.127.255.255/',
  'https://224.0.0.1/',
  'https://255.255.255.255/',
  'https://[::1]/',
  'https://[::]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:169.254.169.254]/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://[::127.0.0.1]/',
  'https://[fe80::1]/',
  'https://[fc00::1]/',
  'https://[fd12:3456::1]/',
  'https://[ff02::1]/',
  'https://[64:ff9b::10.0.0.1]/',
  'http://10.0.0.1/'
]) u;

-- Everything else the IANA IPv4 and IPv6 Special-Purpose Address
-- Registries mark not globally reachable (documentation, benchmarking,
-- IETF protocol assignments, translation for local use, discard, ...),
-- and the IPv4-mapped and IPv4-translated forms whatever they carry.
SELECT u, pg_temp.url(u) FROM unnest(ARRAY[
  'https://192.0.2.2/',
  'https://[::ffff:192.0.2.2]/',
  'https://198.18.0.1/',
  'https://198.19.255.255/',
  'https://192.0.0.192/',
  'https://192.0.0.8/',
  'https://198.51.100.7/',
  'https://203.0.113.9/',
  'https://192.88.99.1/',
  'https://240.0.0.1/',
  'https://[2001:db8::1]/',
  'https://[3fff::1]/',
  'https://[64:ff9b:1::1]/',
  'https://[::ffff:0:7f00:1]/',
  'https://[::ffff:8.8.8.8]/',
  'https://[100::1]/',
  'https://[2001:2::1]/',
  'https://[2001::1]/',
  'https://[2001:10::1]/',
  'https://[5f00::1]/',
  'https://[fec0::1]/',
  'https://[2002:7f00:1::1]/',
  'https://[64:ff9b::c000:202]/'
]) u;

-- Public addresses and names are accepted (names are checked at connect
-- time); so are the edges just outside the refused ranges.
SELECT u, pg_temp.url(u) FROM unnest(ARRAY[
  'https://93.184.215.14/',
  'https://172.32.0.1/',
  'https://100.128.0.1/',
  'https://11.0.0.1/',
  'https://[2606:4700::1111]/',
  'https://192.0.0.9/',
  'https://[2001:1::1]/',
  'https://[64:ff9b::808:808]/',
  'https://[2002:808:808::1]/',
  'https://internal.example/'
]) u;

-- A listed host may be non-public, over https and http.
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'sink.example, 10.0.0.5, ::1';
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SHOW idemgate.allowed_http_hosts;
SELECT u, pg_temp.url(u) FROM unnest(ARRAY[
  'https://10.0.0.5/',
  'http://10.0.0.5:8080/',
  'https://[::1]/',
  'https://10.0.0.6/'
]) u;
ALTER SYSTEM RESET idemgate.allowed_http_hosts;
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SHOW idemgate.allowed_http_hosts;
