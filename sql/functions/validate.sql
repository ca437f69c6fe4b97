-- sql/functions/validate.sql

-- Validating model output (SPEC §2), implemented in src/validate.c.
-- Pure computation: touches no table, so no SECURITY DEFINER.
CREATE OR REPLACE FUNCTION idemgate.validate(output jsonb, schema jsonb)
RETURNS TABLE (valid boolean, errors jsonb)
AS 'MODULE_PATHNAME', 'idemgate_validate'
LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION idemgate.validate(jsonb, jsonb) IS
'Check output against a JSON Schema subset (type, properties, required, additionalProperties, enum, const, minLength, maxLength, minimum, maximum, items, minItems, maxItems, pattern); one row: valid, and errors as [{"path": "$.field", "error": "..."}]. Unsupported or malformed schema keywords raise 22023.';
REVOKE ALL ON FUNCTION idemgate.validate(jsonb,jsonb) FROM PUBLIC;
