-- sql/functions/record_validation.sql

CREATE OR REPLACE FUNCTION idemgate.record_validation(key text, owner uuid, version bigint, output jsonb, schema jsonb)
RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_record_validation';
COMMENT ON FUNCTION idemgate.record_validation(text, uuid, bigint, jsonb, jsonb) IS
'validate() as the run''s live owner, counted for the metrics: one row (valid, errors, attempt = validations of this run so far); a row of NULLs, counting nothing, when ownership was lost. The event keeps the verdict and error count, never the output';
REVOKE ALL ON FUNCTION idemgate.record_validation(text,uuid,bigint,jsonb,jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION idemgate.record_validation(request jsonb)
RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_record_validation_request';
COMMENT ON FUNCTION idemgate.record_validation(jsonb) IS
'record_validation() with its arguments in one JSON object {key, owner, version, output, schema}: the form for n8n';
REVOKE ALL ON FUNCTION idemgate.record_validation(jsonb) FROM PUBLIC;
