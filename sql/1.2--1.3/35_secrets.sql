-- sql/1.2--1.3/35_secrets.sql — provider credentials outside the database
-- (README.md, "Secrets"; src/policy/secrets.c): a header value may name a secret,
-- "Bearer ${secret:crm_token}", kept in the file idemgate.secrets_file
-- names, never in a table, a dump, WAL, an event or a log line.
-- missing_secrets(headers) names the secrets a header object refers to
-- that the file lacks (NULL when none): the alert secret_missing
-- (40_alerts.sql) reads it, so its readers need EXECUTE (a view's functions
-- run with the reader's privileges). It returns names, never values.
\ir ../functions/missing_secrets.sql
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('operator', 'idemgate.missing_secrets(jsonb)'),
    ('reader', 'idemgate.missing_secrets(jsonb)');

