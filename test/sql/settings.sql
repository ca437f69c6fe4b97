-- Settings with a shape are checked when they are set (src/core/guc.c check
-- hooks), so a typo is refused at ALTER SYSTEM / reload instead of
-- silently meaning something else later. ALTER SYSTEM runs the same check
-- as postgresql.conf; a refused value is not written.
CREATE EXTENSION IF NOT EXISTS idemgate;
-- DETAIL says what is wrong with the value.
\set VERBOSITY default
-- idemgate.allowed_http_hosts: host names and IP literals only.
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'http://localhost';
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'localhost:8080';
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'localhost,,127.0.0.1';
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'local host';
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'sink.internal/path';
-- Accepted shapes: names, IPv4, IPv6 with or without brackets, empty (none).
ALTER SYSTEM SET idemgate.allowed_http_hosts = 'localhost, 127.0.0.1, [::1], ::1, sink-1.example.internal';
SELECT setting FROM pg_file_settings WHERE name = 'idemgate.allowed_http_hosts';
ALTER SYSTEM SET idemgate.allowed_http_hosts = '';
ALTER SYSTEM RESET idemgate.allowed_http_hosts;
-- idemgate.database: a database name, 1..63 bytes.
ALTER SYSTEM SET idemgate.database = '';
ALTER SYSTEM SET idemgate.database = 'a_database_name_longer_than_sixty_three_bytes_is_never_a_name_xx';
ALTER SYSTEM RESET idemgate.database;
SELECT count(*) AS written FROM pg_file_settings WHERE name LIKE 'idemgate.%' AND sourcefile LIKE '%auto.conf';
\set VERBOSITY terse
-- Ranges come from src/core/idemgate_limits.h.
ALTER SYSTEM SET idemgate.dispatchers = 9;
ALTER SYSTEM SET idemgate.max_in_flight = 1025;
ALTER SYSTEM SET idemgate.max_backoff = '8d';
SELECT name, min_val, max_val FROM pg_settings
WHERE name IN ('idemgate.dispatchers', 'idemgate.max_in_flight', 'idemgate.max_backoff', 'idemgate.max_lease_life')
ORDER BY name;
-- 1.3: the ranges of the settings of the failure paths, named when refused.
ALTER SYSTEM SET idemgate.tombstone_retention = -1;
ALTER SYSTEM SET idemgate.max_repairs = 101;
ALTER SYSTEM SET idemgate.alert_approval_wait = 0;
SELECT name, setting, min_val, max_val FROM pg_settings
WHERE name IN ('idemgate.tombstone_retention', 'idemgate.max_repairs', 'idemgate.alert_approval_wait')
ORDER BY name;
