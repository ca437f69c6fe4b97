-- idemgate.validate: a JSON Schema subset for a model's structured output.
-- Every expectation below would change if the validator were wrong.
CREATE EXTENSION IF NOT EXISTS idemgate;
SET client_min_messages = notice;
\set VERBOSITY terse

-- Error cases are shown as "SQLSTATE: message" so the code is part of the
-- expected output without file:line noise.
-- With with_detail the errdetail (the reason) follows in parentheses.
CREATE FUNCTION pg_temp.sqlstate_of(q text, with_detail boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    d text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM ||
           CASE WHEN with_detail AND d <> '' THEN ' (' || d || ')' ELSE '' END;
END $$;

-- The contract: one row, (valid boolean, errors jsonb); '[]' when valid.
SELECT * FROM idemgate.validate('{"a": 1}', '{}');
SELECT pg_catalog.pg_get_function_result('idemgate.validate(jsonb,jsonb)'::regprocedure),
       p.provolatile, p.proparallel, p.proisstrict
  FROM pg_catalog.pg_proc p WHERE p.oid = 'idemgate.validate(jsonb,jsonb)'::regprocedure;
-- Callable in the select list too (one row, not zero or many).
SELECT idemgate.validate('1', '{"type": "string"}');

-- ---------------------------------------------------------------------
-- type: every type name, pass and fail; "got" names the actual type.
SELECT t, v, (idemgate.validate(v::jsonb, json_build_object('type', t)::jsonb)).*
  FROM (VALUES ('object'), ('array'), ('string'), ('number'), ('integer'), ('boolean'), ('null')) AS ts(t),
       (VALUES ('{}'), ('[]'), ('"s"'), ('1.5'), ('3'), ('true'), ('null')) AS vs(v)
 ORDER BY t, v;
-- integer: no fractional part, whatever the notation; 3.0 and 1e2 are integers.
SELECT v, (idemgate.validate(v::jsonb, '{"type": "integer"}')).valid
  FROM (VALUES ('3'), ('3.0'), ('-0'), ('1e2'), ('3.5'), ('-2.000001'), ('1e-2'),
               ('123456789012345678901234567890'), ('123456789012345678901234567890.000000000000000000001')) AS vs(v);
-- An array of type names accepts any of them.
SELECT v, (idemgate.validate(v::jsonb, '{"type": ["string", "null"]}')).*
  FROM (VALUES ('"x"'), ('null'), ('0'), ('{}')) AS vs(v);
SELECT * FROM idemgate.validate('true', '{"type": ["integer", "object", "array", "null"]}');

-- ---------------------------------------------------------------------
-- minLength / maxLength count characters, not bytes (of a UTF8 database).
SELECT pg_catalog.getdatabaseencoding();
SELECT v, (idemgate.validate(v::jsonb, '{"type": "string", "minLength": 2, "maxLength": 3}')).*
  FROM (VALUES ('"a"'), ('"ab"'), ('"abc"'), ('"abcd"'), ('""')) AS vs(v);
-- 'ñandú' is 5 characters but 7 bytes; '日本語' is 3 characters, 9 bytes;
-- '😀😀' is 2 characters, 8 bytes.
SELECT v, (idemgate.validate(v::jsonb, '{"maxLength": 5}')).valid AS max5,
          (idemgate.validate(v::jsonb, '{"minLength": 3}')).valid AS min3
  FROM (VALUES ('"ñandú"'), ('"ñandús"'), ('"日本語"'), ('"😀😀"')) AS vs(v);
SELECT * FROM idemgate.validate('"日本語です"', '{"maxLength": 3}');
-- Length keywords only constrain strings.
SELECT * FROM idemgate.validate('[1, 2, 3, 4]', '{"maxLength": 1, "minimum": 10, "pattern": "x"}');

-- ---------------------------------------------------------------------
-- minimum / maximum are inclusive and exact (numeric, no float rounding).
SELECT v, (idemgate.validate(v::jsonb, '{"minimum": 1, "maximum": 5}')).*
  FROM (VALUES ('1'), ('5'), ('5.0'), ('0.999'), ('5.0000000000000000000001'), ('-7')) AS vs(v);
-- 0.1 + 0.2 would be 0.30000000000000004 in binary floating point.
SELECT (idemgate.validate('0.3', '{"maximum": 0.3}')).valid AS exact_equal,
       (idemgate.validate('0.30000000000000004', '{"maximum": 0.3}')).valid AS just_above,
       (idemgate.validate('9007199254740993', '{"maximum": 9007199254740992}')).valid AS past_2_53;
-- Bounds only constrain numbers.
SELECT * FROM idemgate.validate('"100"', '{"maximum": 5}');

-- ---------------------------------------------------------------------
-- enum and const use jsonb equality (1.0 = 1, key order irrelevant,
-- "1" is not 1, arrays are ordered).
SELECT v, (idemgate.validate(v::jsonb, '{"enum": ["bug", 1, null, {"a": [1, 2]}]}')).*
  FROM (VALUES ('"bug"'), ('1.0'), ('null'), ('{"a": [1.00, 2]}'), ('"1"'), ('"Bug"'), ('{"a": [2, 1]}'), ('false'), ('[]')) AS vs(v);
SELECT v, (idemgate.validate(v::jsonb, '{"const": {"x": 1, "y": [true]}}')).*
  FROM (VALUES ('{"y": [true], "x": 1}'), ('{"x": 1}'), ('{"x": 1, "y": [true], "z": 0}'), ('[{"x": 1}]')) AS vs(v);
SELECT v, (idemgate.validate(v::jsonb, '{"const": false}')).valid
  FROM (VALUES ('false'), ('0'), ('null'), ('"false"')) AS vs(v);
SELECT * FROM idemgate.validate('"x"', '{"const": "x\"y"}');

-- ---------------------------------------------------------------------
-- pattern: PostgreSQL's regex (as ~), unanchored unless anchored.
SELECT v, (idemgate.validate(v::jsonb, '{"pattern": "^[A-Z]{3}-[0-9]+$"}')).*
  FROM (VALUES ('"ABC-123"'), ('"abc-123"'), ('"ABC-"'), ('"xABC-1"')) AS vs(v);
SELECT (idemgate.validate('"the order 42 shipped"', '{"pattern": "[0-9]+"}')).valid AS unanchored,
       (idemgate.validate('"señor"', '{"pattern": "^se.or$"}')).valid AS dot_is_one_character,
       (idemgate.validate('"a\nb"', '{"pattern": "^a.b$"}')).valid AS dot_matches_newline,
       (idemgate.validate('"Hello"', '{"pattern": "^hello$"}')).valid AS case_sensitive,
       (idemgate.validate('"x1"', '{"pattern": "\\d"}')).valid AS are_escape;
-- Matching uses the C collation: character classes are ASCII-only, whatever
-- the database's locale (so the result never depends on it).
SELECT (idemgate.validate('"Jose"', '{"pattern": "^[[:alpha:]]+$"}')).valid AS ascii_alpha,
       (idemgate.validate('"José"', '{"pattern": "^[[:alpha:]]+$"}')).valid AS accented_alpha,
       (idemgate.validate('"José"', '{"pattern": "^Jos[é]$"}')).valid AS literal_accent;

-- ---------------------------------------------------------------------
-- Objects: properties, required, additionalProperties.
SELECT * FROM idemgate.validate('{"name": "Ana", "age": 30}',
  '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}');
SELECT * FROM idemgate.validate('{"age": "thirty"}',
  '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}');
-- Absent optional properties are fine; undeclared ones are allowed by default.
SELECT * FROM idemgate.validate('{"extra": [1]}', '{"properties": {"name": {"type": "string"}}}');
SELECT * FROM idemgate.validate('{"extra": [1], "name": "x"}', '{"properties": {"name": {"type": "string"}}, "additionalProperties": true}');
SELECT * FROM idemgate.validate('{"extra": [1], "name": "x", "also": 2}', '{"properties": {"name": {"type": "string"}}, "additionalProperties": false}');
SELECT * FROM idemgate.validate('{}', '{"additionalProperties": false}');
SELECT * FROM idemgate.validate('{"a": 1}', '{"additionalProperties": false}');
-- Object keywords only constrain objects; a required null member is present.
SELECT * FROM idemgate.validate('[{"a": 1}]', '{"required": ["b"], "additionalProperties": false}');
SELECT * FROM idemgate.validate('{"b": null}', '{"required": ["b"]}');
-- Names that are not plain identifiers use bracket notation in paths.
SELECT * FROM idemgate.validate('{"first name": 1, "ok_1": 1, "1st": 1, "a\"b": 1, "": 1, "ü": 1}',
  '{"properties": {"first name": {"type": "string"}, "ok_1": {"type": "string"}, "1st": {"type": "string"},
                   "a\"b": {"type": "string"}, "": {"type": "string"}, "ü": {"type": "string"}}}');
SELECT * FROM idemgate.validate('{}', '{"required": ["first name", "x"]}');

-- ---------------------------------------------------------------------
-- Arrays: items, minItems, maxItems.
SELECT v, (idemgate.validate(v::jsonb, '{"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}}')).*
  FROM (VALUES ('[]'), ('["a"]'), ('["a", "b", "c"]'), ('["a", "b", "c", "d"]'), ('["a", 2, "c", null]')) AS vs(v);
SELECT * FROM idemgate.validate('[[1, 2], [3, "x"], []]', '{"items": {"items": {"type": "integer"}, "minItems": 1}}');

-- ---------------------------------------------------------------------
-- Nested paths, and every error collected in document order: a node's own
-- errors first, then its members (jsonb key order) or elements (index order).
SELECT e->>'path' AS path, e->>'error' AS error
  FROM idemgate.validate(
  '{"customer": {"name": "", "emails": ["a@x.org", 7, "bad"]},
    "lines": [{"sku": "A-1", "qty": 2}, {"sku": "b", "qty": 0.5}, {"qty": 99}],
    "total": -1, "note": "ok"}',
  '{"type": "object", "additionalProperties": false, "required": ["customer", "lines", "total", "currency"],
    "properties": {
      "customer": {"type": "object", "required": ["name", "phone"], "properties": {
          "name": {"type": "string", "minLength": 1},
          "emails": {"type": "array", "maxItems": 2, "items": {"type": "string", "pattern": "@"}}}},
      "lines": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"], "properties": {
          "sku": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"},
          "qty": {"type": "integer", "minimum": 1, "maximum": 10}}}},
      "total": {"type": "number", "minimum": 0},
      "currency": {"enum": ["EUR", "USD"]}}}') AS r,
  LATERAL jsonb_array_elements(r.errors) WITH ORDINALITY AS x(e, n)
 ORDER BY n;
-- The same call's summary: not valid, 13 errors.
SELECT valid, jsonb_array_length(errors)
  FROM idemgate.validate(
  '{"customer": {"name": "", "emails": ["a@x.org", 7, "bad"]},
    "lines": [{"sku": "A-1", "qty": 2}, {"sku": "b", "qty": 0.5}, {"qty": 99}],
    "total": -1, "note": "ok"}',
  '{"type": "object", "additionalProperties": false, "required": ["customer", "lines", "total", "currency"],
    "properties": {
      "customer": {"type": "object", "required": ["name", "phone"], "properties": {
          "name": {"type": "string", "minLength": 1},
          "emails": {"type": "array", "maxItems": 2, "items": {"type": "string", "pattern": "@"}}}},
      "lines": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"], "properties": {
          "sku": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"},
          "qty": {"type": "integer", "minimum": 1, "maximum": 10}}}},
      "total": {"type": "number", "minimum": 0},
      "currency": {"enum": ["EUR", "USD"]}}}');
-- Several keywords failing on one value are all reported.
SELECT * FROM idemgate.validate('"toolong"', '{"type": "string", "maxLength": 3, "pattern": "^[0-9]+$", "enum": ["1"], "const": "1"}');
SELECT * FROM idemgate.validate('7', '{"type": "string", "enum": ["a"]}');

-- ---------------------------------------------------------------------
-- A realistic model-output schema: ticket classification.
CREATE TEMP TABLE ticket_schema AS SELECT
'{"$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/ticket.json",
  "title": "Ticket classification",
  "description": "What the model must return for every support ticket",
  "type": "object",
  "additionalProperties": false,
  "required": ["category", "priority", "summary", "tags"],
  "properties": {
    "category": {"type": "string", "enum": ["billing", "bug", "feature", "other"], "description": "one of four"},
    "priority": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
    "summary":  {"type": "string", "minLength": 1, "maxLength": 200, "examples": ["Refund for order 42"]},
    "tags":     {"type": "array", "maxItems": 5, "items": {"type": "string"}}
  }}'::jsonb AS s;
-- A good answer.
SELECT r.* FROM ticket_schema,
  idemgate.validate('{"category": "billing", "priority": 2, "summary": "Customer was charged twice", "tags": ["refund", "card"]}', s) r;
-- priority 3.0 is an integer; an empty tags list is fine.
SELECT r.* FROM ticket_schema,
  idemgate.validate('{"category": "bug", "priority": 3.0, "summary": "x", "tags": []}', s) r;
-- A typical bad answer: wrong enum, priority as text, long summary,
-- too many tags (one not a string), an invented field, no errors hidden.
SELECT jsonb_pretty(r.errors), r.valid FROM ticket_schema,
  idemgate.validate(jsonb_build_object(
      'category', 'Billing', 'priority', '2', 'summary', repeat('é', 201),
      'tags', '["a", "b", "c", "d", "e", 6]'::jsonb, 'confidence', 0.9), s) r;
-- Priority out of range on both sides; the model forgot two fields.
SELECT r.* FROM ticket_schema, idemgate.validate('{"category": "other", "priority": 0}', s) r;
SELECT r.* FROM ticket_schema, idemgate.validate('{"category": "other", "priority": 6, "summary": "s", "tags": ["x"]}', s) r;
-- Not even an object.
SELECT r.* FROM ticket_schema, idemgate.validate('"I think this is a billing issue"', s) r;

-- ---------------------------------------------------------------------
-- Annotations are accepted and ignored anywhere (their values are not schemas).
SELECT * FROM idemgate.validate('5', '{"title": 1, "description": ["x"], "default": {"oneOf": 1}, "examples": [{"$ref": "#"}], "$id": "x", "$schema": null}');
-- Property names that look like keywords are just names.
SELECT * FROM idemgate.validate('{"format": 1, "oneOf": "x"}', '{"properties": {"format": {"type": "integer"}, "oneOf": {"type": "integer"}}}');

-- Unsupported keywords are an error of the call (22023), wherever they are.
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"oneOf": [{"type": "string"}]}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"type": "string", "format": "email"}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"$ref": "#/definitions/x"}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"properties": {"a": {"type": "string", "exclusiveMinimum": 0}}}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"properties": {"first name": {"items": {"anyOf": []}}}}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{"Type": "string"}')$q$);
-- ... even when the output never reaches that part of the schema.
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('"x"', '{"items": {"uniqueItems": true}}')$q$);
-- The hint lists what is supported.
DO $$
BEGIN
    PERFORM idemgate.validate('1', '{"format": "date"}');
EXCEPTION WHEN invalid_parameter_value THEN
    DECLARE h text; d text;
    BEGIN
        GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT, d = PG_EXCEPTION_DETAIL;
        RAISE NOTICE 'detail: %', d;
        RAISE NOTICE 'hint: %', h;
    END;
END $$;

-- Malformed schemas are 22023 too; the detail says why. The three "no error"
-- rows are boundaries that are valid: the largest count, 2.0 as a count, and
-- an empty required list.
SELECT q, pg_temp.sqlstate_of(format('SELECT idemgate.validate(%L, %L)', '"x"', q), true)
  FROM (VALUES
    ('5'), ('[]'), ('"string"'), ('true'),
    ('{"type": "banana"}'), ('{"type": 1}'), ('{"type": []}'), ('{"type": ["string", 1]}'),
    ('{"type": ["string", "string"]}'), ('{"type": ["string", "float"]}'),
    ('{"minLength": -1}'), ('{"maxLength": 1.5}'), ('{"minItems": "3"}'), ('{"maxItems": 2147483648}'),
    ('{"minLength": 2147483647}'), ('{"maxItems": 2.0}'),
    ('{"minimum": "1"}'), ('{"maximum": null}'),
    ('{"required": "name"}'), ('{"required": ["a", 1]}'), ('{"required": ["a", "b", "a"]}'), ('{"required": []}'),
    ('{"additionalProperties": {}}'), ('{"additionalProperties": "false"}'),
    ('{"properties": []}'), ('{"properties": {"a": 1}}'), ('{"properties": {"a": {"type": "x"}}}'),
    ('{"items": [{"type": "string"}]}'), ('{"items": true}'), ('{"items": {"items": {"minItems": -2}}}'),
    ('{"enum": []}'), ('{"enum": "a"}'),
    ('{"pattern": "("}'), ('{"pattern": "[z-a]"}'), ('{"pattern": 5}'), ('{"pattern": "a{2,1}"}')
  ) AS qs(q);

-- NULL arguments are 22004, naming the argument; a JSON null is a value.
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate(NULL, '{}')$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', NULL)$q$);
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate(NULL, NULL)$q$);
SELECT * FROM idemgate.validate('null', '{"type": "null"}');
SELECT * FROM idemgate.validate('null', '{"type": "object"}');

-- ---------------------------------------------------------------------
-- Depth: the output's own depth costs nothing (recursion follows the schema).
SELECT r.valid, r.errors
  FROM idemgate.validate((repeat('[', 10000) || repeat(']', 10000))::jsonb, '{"type": "array", "minItems": 1, "items": {"type": "array"}}') r;
SELECT r.valid, r.errors
  FROM idemgate.validate((repeat('[', 10000) || repeat(']', 10000))::jsonb, '{"const": []}') r;
-- A deep output compared with enum/const works (jsonb equality, no recursion).
SELECT r.valid FROM idemgate.validate((repeat('[', 5000) || repeat(']', 5000))::jsonb,
    jsonb_build_object('enum', jsonb_build_array(0, (repeat('[', 5000) || repeat(']', 5000))::jsonb))) r;
-- Deep schemas validate up to the limit, with exact paths...
SELECT r.valid, pg_catalog.length(r.errors->0->>'path') AS path_length, r.errors->0->>'error' AS error
  FROM idemgate.validate((repeat('[', 1001) || '"x"' || repeat(']', 1001))::jsonb,
    (repeat('{"items": ', 1000) || '{"type": "integer"}' || repeat('}', 1000))::jsonb) r;
-- ... and beyond it the call fails cleanly.
SELECT pg_temp.sqlstate_of(format('SELECT idemgate.validate(%L, %L)', '[]',
    repeat('{"items": ', 1001) || '{}' || repeat('}', 1001)));
SELECT pg_temp.sqlstate_of(format('SELECT idemgate.validate(%L, %L)', '[]',
    repeat('{"items": ', 10000) || '{}' || repeat('}', 10000)));
SELECT pg_temp.sqlstate_of(format('SELECT idemgate.validate(%L, %L)', '{}',
    repeat('{"properties": {"a": ', 5000) || '{}' || repeat('}}', 5000)));

-- Many errors are all collected.
SELECT valid, jsonb_array_length(errors), errors->0, errors->9999
  FROM idemgate.validate((SELECT jsonb_agg(i) FROM generate_series(1, 10000) i), '{"items": {"type": "string"}}');


-- Privileges: not executable by PUBLIC; the client bundle may call it.
CREATE ROLE validate_client;
CREATE ROLE validate_nobody;
SELECT idemgate.grant_role('validate_client', 'client');
SELECT b.bundle FROM idemgate.bundle_members b
 WHERE b.fn::regprocedure = 'idemgate.validate(jsonb,jsonb)'::regprocedure ORDER BY 1;
SET ROLE validate_client;
SELECT * FROM idemgate.validate('{"id": 1}', '{"required": ["id"]}');
RESET ROLE;
-- Even with the schema usable, a role without the bundle cannot execute it.
GRANT USAGE ON SCHEMA idemgate TO validate_nobody;
SET ROLE validate_nobody;
SELECT pg_temp.sqlstate_of($q$SELECT idemgate.validate('1', '{}')$q$);
RESET ROLE;
DROP OWNED BY validate_client, validate_nobody;
DROP ROLE validate_client;
DROP ROLE validate_nobody;
