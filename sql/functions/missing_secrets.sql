-- sql/functions/missing_secrets.sql

-- missing_secrets: provider credentials outside the database
-- (README.md, "Secrets"; src/policy/secrets.c): a header value may name a secret,
-- "Bearer ${secret:crm_token}", kept in the file idemgate.secrets_file
-- names, never in a table, a dump, WAL, an event or a log line.
-- missing_secrets(headers) names the secrets a header object refers to
-- that the file lacks (NULL when none): the alert secret_missing
-- (40_alerts.sql) reads it, so its readers need EXECUTE (a view's functions
-- run with the reader's privileges). It returns names, never values.
CREATE OR REPLACE FUNCTION idemgate.missing_secrets(headers jsonb) RETURNS text[]
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'idemgate_missing_secrets';
COMMENT ON FUNCTION idemgate.missing_secrets(jsonb) IS
'The secrets (${secret:NAME}) the header values name that idemgate.secrets_file lacks, or NULL; names only, for the secret_missing alert';
REVOKE ALL ON FUNCTION idemgate.missing_secrets(jsonb) FROM PUBLIC;
