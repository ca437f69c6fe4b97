-- sql/functions/fail.sql

CREATE OR REPLACE FUNCTION idemgate.fail(key text, owner uuid, version bigint, error_class text, error text,
                                         retryable boolean) RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail';
COMMENT ON FUNCTION idemgate.fail(text, uuid, bigint, text, text, boolean) IS
'Record a failure as the live owner: failed_retryable, or failed_terminal plus a dead letter once idemgate.max_run_attempts is reached or when not retryable';
REVOKE ALL ON FUNCTION idemgate.fail(text,uuid,bigint,text,text,boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.fail(request jsonb)
RETURNS text
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_fail_request';
COMMENT ON FUNCTION idemgate.fail(jsonb) IS
'fail() with its arguments in one JSON object {key, owner, version, error_class, error, retryable}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.fail(jsonb) FROM PUBLIC;
