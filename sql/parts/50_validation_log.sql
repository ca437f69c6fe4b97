
-- Recording validations of model output (src/validation_log.c).

ALTER TABLE idemgate.runs ADD COLUMN validations integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN idemgate.runs.validations IS
'How many times record_validation checked this run''s model output (the attempt number of bounded repair)';

CREATE FUNCTION idemgate.record_validation(key text, owner uuid, version bigint, output jsonb, schema jsonb)
RETURNS TABLE(valid boolean, errors jsonb, attempt integer)
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
ROWS 1 AS 'MODULE_PATHNAME', 'idemgate_record_validation';
COMMENT ON FUNCTION idemgate.record_validation(text, uuid, bigint, jsonb, jsonb) IS
'validate() as the run''s live owner, counted for the metrics: one row (valid, errors, attempt = validations of this run so far); a row of NULLs, counting nothing, when ownership was lost. The event keeps the verdict and error count, never the output';

INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('client', 'idemgate.record_validation(text,uuid,bigint,jsonb,jsonb)');
