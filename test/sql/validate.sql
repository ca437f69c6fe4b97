-- idemgate.validate: a JSON Schema subset for a model's structured output.
-- Every expectation below would change if the validator were wrong. pgTAP.
\i test/sql/include/pgtap.psql
-- detail_of(q) / hint_of(q): the DETAIL / HINT of the error q raises
-- (throws_ok checks the SQLSTATE and the message, not these).
CREATE FUNCTION pg_temp.detail_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL; RETURN d; END $$;
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT; RETURN h; END $$;
SELECT * FROM no_plan();

-- The contract: one row, (valid boolean, errors jsonb); '[]' when valid.
SELECT results_eq($$SELECT * FROM idemgate.validate('{"a": 1}', '{}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'valid: one row, errors []');
SELECT results_eq($$SELECT pg_catalog.pg_get_function_result('idemgate.validate(jsonb,jsonb)'::regprocedure),
       p.provolatile::text, p.proparallel::text, p.proisstrict
  FROM pg_catalog.pg_proc p WHERE p.oid = 'idemgate.validate(jsonb,jsonb)'::regprocedure$$,
                  $$VALUES ('TABLE(valid boolean, errors jsonb)'::text, 'i'::text, 's'::text, false)$$,
                  'result columns; immutable, parallel safe, not strict');
-- Callable in the select list too (one row, not zero or many).
SELECT results_eq($$SELECT idemgate.validate('1', '{"type": "string"}')::text$$,
                  $$VALUES ('(f,"[{""path"": ""$"", ""error"": ""expected string, got number""}]")'::text)$$,
                  'callable in the select list');

-- ---------------------------------------------------------------------
-- type: every type name, pass and fail; "got" names the actual type.
SELECT results_eq($$SELECT t, v, (idemgate.validate(v::jsonb, json_build_object('type', t)::jsonb)).*
  FROM (VALUES ('object'), ('array'), ('string'), ('number'), ('integer'), ('boolean'), ('null')) AS ts(t),
       (VALUES ('{}'), ('[]'), ('"s"'), ('1.5'), ('3'), ('true'), ('null')) AS vs(v)
 ORDER BY t, v$$,
                  $$VALUES ('array'::text, '"s"'::text, false, '[{"path": "$", "error": "expected array, got string"}]'::jsonb),
                           ('array'::text, '1.5'::text, false, '[{"path": "$", "error": "expected array, got number"}]'::jsonb),
                           ('array'::text, '3'::text, false, '[{"path": "$", "error": "expected array, got number"}]'::jsonb),
                           ('array'::text, '[]'::text, true, '[]'::jsonb),
                           ('array'::text, 'null'::text, false, '[{"path": "$", "error": "expected array, got null"}]'::jsonb),
                           ('array'::text, 'true'::text, false, '[{"path": "$", "error": "expected array, got boolean"}]'::jsonb),
                           ('array'::text, '{}'::text, false, '[{"path": "$", "error": "expected array, got object"}]'::jsonb),
                           ('boolean'::text, '"s"'::text, false, '[{"path": "$", "error": "expected boolean, got string"}]'::jsonb),
                           ('boolean'::text, '1.5'::text, false, '[{"path": "$", "error": "expected boolean, got number"}]'::jsonb),
                           ('boolean'::text, '3'::text, false, '[{"path": "$", "error": "expected boolean, got number"}]'::jsonb),
                           ('boolean'::text, '[]'::text, false, '[{"path": "$", "error": "expected boolean, got array"}]'::jsonb),
                           ('boolean'::text, 'null'::text, false, '[{"path": "$", "error": "expected boolean, got null"}]'::jsonb),
                           ('boolean'::text, 'true'::text, true, '[]'::jsonb),
                           ('boolean'::text, '{}'::text, false, '[{"path": "$", "error": "expected boolean, got object"}]'::jsonb),
                           ('integer'::text, '"s"'::text, false, '[{"path": "$", "error": "expected integer, got string"}]'::jsonb),
                           ('integer'::text, '1.5'::text, false, '[{"path": "$", "error": "expected integer, got number"}]'::jsonb),
                           ('integer'::text, '3'::text, true, '[]'::jsonb),
                           ('integer'::text, '[]'::text, false, '[{"path": "$", "error": "expected integer, got array"}]'::jsonb),
                           ('integer'::text, 'null'::text, false, '[{"path": "$", "error": "expected integer, got null"}]'::jsonb),
                           ('integer'::text, 'true'::text, false, '[{"path": "$", "error": "expected integer, got boolean"}]'::jsonb),
                           ('integer'::text, '{}'::text, false, '[{"path": "$", "error": "expected integer, got object"}]'::jsonb),
                           ('null'::text, '"s"'::text, false, '[{"path": "$", "error": "expected null, got string"}]'::jsonb),
                           ('null'::text, '1.5'::text, false, '[{"path": "$", "error": "expected null, got number"}]'::jsonb),
                           ('null'::text, '3'::text, false, '[{"path": "$", "error": "expected null, got number"}]'::jsonb),
                           ('null'::text, '[]'::text, false, '[{"path": "$", "error": "expected null, got array"}]'::jsonb),
                           ('null'::text, 'null'::text, true, '[]'::jsonb),
                           ('null'::text, 'true'::text, false, '[{"path": "$", "error": "expected null, got boolean"}]'::jsonb),
                           ('null'::text, '{}'::text, false, '[{"path": "$", "error": "expected null, got object"}]'::jsonb),
                           ('number'::text, '"s"'::text, false, '[{"path": "$", "error": "expected number, got string"}]'::jsonb),
                           ('number'::text, '1.5'::text, true, '[]'::jsonb),
                           ('number'::text, '3'::text, true, '[]'::jsonb),
                           ('number'::text, '[]'::text, false, '[{"path": "$", "error": "expected number, got array"}]'::jsonb),
                           ('number'::text, 'null'::text, false, '[{"path": "$", "error": "expected number, got null"}]'::jsonb),
                           ('number'::text, 'true'::text, false, '[{"path": "$", "error": "expected number, got boolean"}]'::jsonb),
                           ('number'::text, '{}'::text, false, '[{"path": "$", "error": "expected number, got object"}]'::jsonb),
                           ('object'::text, '"s"'::text, false, '[{"path": "$", "error": "expected object, got string"}]'::jsonb),
                           ('object'::text, '1.5'::text, false, '[{"path": "$", "error": "expected object, got number"}]'::jsonb),
                           ('object'::text, '3'::text, false, '[{"path": "$", "error": "expected object, got number"}]'::jsonb),
                           ('object'::text, '[]'::text, false, '[{"path": "$", "error": "expected object, got array"}]'::jsonb),
                           ('object'::text, 'null'::text, false, '[{"path": "$", "error": "expected object, got null"}]'::jsonb),
                           ('object'::text, 'true'::text, false, '[{"path": "$", "error": "expected object, got boolean"}]'::jsonb),
                           ('object'::text, '{}'::text, true, '[]'::jsonb),
                           ('string'::text, '"s"'::text, true, '[]'::jsonb),
                           ('string'::text, '1.5'::text, false, '[{"path": "$", "error": "expected string, got number"}]'::jsonb),
                           ('string'::text, '3'::text, false, '[{"path": "$", "error": "expected string, got number"}]'::jsonb),
                           ('string'::text, '[]'::text, false, '[{"path": "$", "error": "expected string, got array"}]'::jsonb),
                           ('string'::text, 'null'::text, false, '[{"path": "$", "error": "expected string, got null"}]'::jsonb),
                           ('string'::text, 'true'::text, false, '[{"path": "$", "error": "expected string, got boolean"}]'::jsonb),
                           ('string'::text, '{}'::text, false, '[{"path": "$", "error": "expected string, got object"}]'::jsonb)$$,
                  'every type name against every kind of value');
-- integer: no fractional part, whatever the notation; 3.0 and 1e2 are integers.
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"type": "integer"}')).valid
  FROM (VALUES ('3'), ('3.0'), ('-0'), ('1e2'), ('3.5'), ('-2.000001'), ('1e-2'),
               ('123456789012345678901234567890'), ('123456789012345678901234567890.000000000000000000001')) AS vs(v)$$,
                  $$VALUES ('3'::text, true),
                           ('3.0'::text, true),
                           ('-0'::text, true),
                           ('1e2'::text, true),
                           ('3.5'::text, false),
                           ('-2.000001'::text, false),
                           ('1e-2'::text, false),
                           ('123456789012345678901234567890'::text, true),
                           ('123456789012345678901234567890.000000000000000000001'::text, false)$$,
                  'integer: no fractional part, whatever the notation');
-- An array of type names accepts any of them.
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"type": ["string", "null"]}')).*
  FROM (VALUES ('"x"'), ('null'), ('0'), ('{}')) AS vs(v)$$,
                  $$VALUES ('"x"'::text, true, '[]'::jsonb),
                           ('null'::text, true, '[]'::jsonb),
                           ('0'::text, false, '[{"path": "$", "error": "expected string or null, got number"}]'::jsonb),
                           ('{}'::text, false, '[{"path": "$", "error": "expected string or null, got object"}]'::jsonb)$$,
                  'a type array accepts any of its types');
SELECT results_eq($$SELECT * FROM idemgate.validate('true', '{"type": ["integer", "object", "array", "null"]}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "expected object, array, integer or null, got boolean"}]'::jsonb)$$,
                  'a type array names all its types');

-- ---------------------------------------------------------------------
-- minLength / maxLength count characters, not bytes (of a UTF8 database).
SELECT is(pg_catalog.getdatabaseencoding()::text, 'UTF8', 'a UTF8 database');
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"type": "string", "minLength": 2, "maxLength": 3}')).*
  FROM (VALUES ('"a"'), ('"ab"'), ('"abc"'), ('"abcd"'), ('""')) AS vs(v)$$,
                  $$VALUES ('"a"'::text, false, '[{"path": "$", "error": "string has 1 character, fewer than the minimum of 2"}]'::jsonb),
                           ('"ab"'::text, true, '[]'::jsonb),
                           ('"abc"'::text, true, '[]'::jsonb),
                           ('"abcd"'::text, false, '[{"path": "$", "error": "string has 4 characters, more than the maximum of 3"}]'::jsonb),
                           ('""'::text, false, '[{"path": "$", "error": "string has 0 characters, fewer than the minimum of 2"}]'::jsonb)$$,
                  'minLength and maxLength');
-- 'ñandú' is 5 characters but 7 bytes; '日本語' is 3 characters, 9 bytes;
-- '😀😀' is 2 characters, 8 bytes.
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"maxLength": 5}')).valid AS max5,
          (idemgate.validate(v::jsonb, '{"minLength": 3}')).valid AS min3
  FROM (VALUES ('"ñandú"'), ('"ñandús"'), ('"日本語"'), ('"😀😀"')) AS vs(v)$$,
                  $$VALUES ('"ñandú"'::text, true, true),
                           ('"ñandús"'::text, false, true),
                           ('"日本語"'::text, true, true),
                           ('"😀😀"'::text, true, false)$$,
                  'lengths count characters, not bytes');
SELECT results_eq($$SELECT * FROM idemgate.validate('"日本語です"', '{"maxLength": 3}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "string has 5 characters, more than the maximum of 3"}]'::jsonb)$$,
                  'five characters are more than 3');
-- Length keywords only constrain strings.
SELECT results_eq($$SELECT * FROM idemgate.validate('[1, 2, 3, 4]', '{"maxLength": 1, "minimum": 10, "pattern": "x"}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'string and number keywords ignore an array');

-- ---------------------------------------------------------------------
-- minimum / maximum are inclusive and exact (numeric, no float rounding).
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"minimum": 1, "maximum": 5}')).*
  FROM (VALUES ('1'), ('5'), ('5.0'), ('0.999'), ('5.0000000000000000000001'), ('-7')) AS vs(v)$$,
                  $$VALUES ('1'::text, true, '[]'::jsonb),
                           ('5'::text, true, '[]'::jsonb),
                           ('5.0'::text, true, '[]'::jsonb),
                           ('0.999'::text, false, '[{"path": "$", "error": "0.999 is less than the minimum of 1"}]'::jsonb),
                           ('5.0000000000000000000001'::text, false, '[{"path": "$", "error": "5.0000000000000000000001 is greater than the maximum of 5"}]'::jsonb),
                           ('-7'::text, false, '[{"path": "$", "error": "-7 is less than the minimum of 1"}]'::jsonb)$$,
                  'minimum and maximum, inclusive and exact');
-- 0.1 + 0.2 would be 0.30000000000000004 in binary floating point.
SELECT results_eq($$SELECT (idemgate.validate('0.3', '{"maximum": 0.3}')).valid AS exact_equal,
       (idemgate.validate('0.30000000000000004', '{"maximum": 0.3}')).valid AS just_above,
       (idemgate.validate('9007199254740993', '{"maximum": 9007199254740992}')).valid AS past_2_53$$,
                  $$VALUES (true, false, false)$$,
                  'no float rounding');
-- Bounds only constrain numbers.
SELECT results_eq($$SELECT * FROM idemgate.validate('"100"', '{"maximum": 5}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'bounds ignore a string');

-- ---------------------------------------------------------------------
-- enum and const use jsonb equality (1.0 = 1, key order irrelevant,
-- "1" is not 1, arrays are ordered).
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"enum": ["bug", 1, null, {"a": [1, 2]}]}')).*
  FROM (VALUES ('"bug"'), ('1.0'), ('null'), ('{"a": [1.00, 2]}'), ('"1"'), ('"Bug"'), ('{"a": [2, 1]}'), ('false'), ('[]')) AS vs(v)$$,
                  $$VALUES ('"bug"'::text, true, '[]'::jsonb),
                           ('1.0'::text, true, '[]'::jsonb),
                           ('null'::text, true, '[]'::jsonb),
                           ('{"a": [1.00, 2]}'::text, true, '[]'::jsonb),
                           ('"1"'::text, false, '[{"path": "$", "error": "value is not one of [\"bug\", 1, null, {\"a\": [1, 2]}]"}]'::jsonb),
                           ('"Bug"'::text, false, '[{"path": "$", "error": "value is not one of [\"bug\", 1, null, {\"a\": [1, 2]}]"}]'::jsonb),
                           ('{"a": [2, 1]}'::text, false, '[{"path": "$", "error": "value is not one of [\"bug\", 1, null, {\"a\": [1, 2]}]"}]'::jsonb),
                           ('false'::text, false, '[{"path": "$", "error": "value is not one of [\"bug\", 1, null, {\"a\": [1, 2]}]"}]'::jsonb),
                           ('[]'::text, false, '[{"path": "$", "error": "value is not one of [\"bug\", 1, null, {\"a\": [1, 2]}]"}]'::jsonb)$$,
                  'enum: jsonb equality');
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"const": {"x": 1, "y": [true]}}')).*
  FROM (VALUES ('{"y": [true], "x": 1}'), ('{"x": 1}'), ('{"x": 1, "y": [true], "z": 0}'), ('[{"x": 1}]')) AS vs(v)$$,
                  $$VALUES ('{"y": [true], "x": 1}'::text, true, '[]'::jsonb),
                           ('{"x": 1}'::text, false, '[{"path": "$", "error": "value must be {\"x\": 1, \"y\": [true]}"}]'::jsonb),
                           ('{"x": 1, "y": [true], "z": 0}'::text, false, '[{"path": "$", "error": "value must be {\"x\": 1, \"y\": [true]}"}]'::jsonb),
                           ('[{"x": 1}]'::text, false, '[{"path": "$", "error": "value must be {\"x\": 1, \"y\": [true]}"}]'::jsonb)$$,
                  'const: jsonb equality');
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"const": false}')).valid
  FROM (VALUES ('false'), ('0'), ('null'), ('"false"')) AS vs(v)$$,
                  $$VALUES ('false'::text, true),
                           ('0'::text, false),
                           ('null'::text, false),
                           ('"false"'::text, false)$$,
                  'const false is only false');
SELECT results_eq($$SELECT * FROM idemgate.validate('"x"', '{"const": "x\"y"}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "value must be \"x\\\"y\""}]'::jsonb)$$,
                  'the const is quoted in the error');

-- ---------------------------------------------------------------------
-- pattern: PostgreSQL's regex (as ~), unanchored unless anchored.
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"pattern": "^[A-Z]{3}-[0-9]+$"}')).*
  FROM (VALUES ('"ABC-123"'), ('"abc-123"'), ('"ABC-"'), ('"xABC-1"')) AS vs(v)$$,
                  $$VALUES ('"ABC-123"'::text, true, '[]'::jsonb),
                           ('"abc-123"'::text, false, '[{"path": "$", "error": "string does not match the pattern \"^[A-Z]{3}-[0-9]+$\""}]'::jsonb),
                           ('"ABC-"'::text, false, '[{"path": "$", "error": "string does not match the pattern \"^[A-Z]{3}-[0-9]+$\""}]'::jsonb),
                           ('"xABC-1"'::text, false, '[{"path": "$", "error": "string does not match the pattern \"^[A-Z]{3}-[0-9]+$\""}]'::jsonb)$$,
                  'an anchored pattern');
SELECT results_eq($$SELECT (idemgate.validate('"the order 42 shipped"', '{"pattern": "[0-9]+"}')).valid AS unanchored,
       (idemgate.validate('"señor"', '{"pattern": "^se.or$"}')).valid AS dot_is_one_character,
       (idemgate.validate('"a\nb"', '{"pattern": "^a.b$"}')).valid AS dot_matches_newline,
       (idemgate.validate('"Hello"', '{"pattern": "^hello$"}')).valid AS case_sensitive,
       (idemgate.validate('"x1"', '{"pattern": "\\d"}')).valid AS are_escape$$,
                  $$VALUES (true, true, true, false, true)$$,
                  'unanchored, dot is one character and matches a newline, case-sensitive, ARE escapes');
-- Matching uses the C collation: character classes are ASCII-only, whatever
-- the database's locale (so the result never depends on it).
SELECT results_eq($$SELECT (idemgate.validate('"Jose"', '{"pattern": "^[[:alpha:]]+$"}')).valid AS ascii_alpha,
       (idemgate.validate('"José"', '{"pattern": "^[[:alpha:]]+$"}')).valid AS accented_alpha,
       (idemgate.validate('"José"', '{"pattern": "^Jos[é]$"}')).valid AS literal_accent$$,
                  $$VALUES (true, false, true)$$,
                  'character classes are ASCII-only');

-- ---------------------------------------------------------------------
-- Objects: properties, required, additionalProperties.
SELECT results_eq($$SELECT * FROM idemgate.validate('{"name": "Ana", "age": 30}',
  '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'an object that fits');
SELECT results_eq($$SELECT * FROM idemgate.validate('{"age": "thirty"}',
  '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "missing required property \"name\""}, {"path": "$.age", "error": "expected integer, got string"}]'::jsonb)$$,
                  'a missing and a mistyped property');
-- Absent optional properties are fine; undeclared ones are allowed by default.
SELECT results_eq($$SELECT * FROM idemgate.validate('{"extra": [1]}', '{"properties": {"name": {"type": "string"}}}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'undeclared properties are allowed by default');
SELECT results_eq($$SELECT * FROM idemgate.validate('{"extra": [1], "name": "x"}', '{"properties": {"name": {"type": "string"}}, "additionalProperties": true}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'additionalProperties true');
SELECT results_eq($$SELECT * FROM idemgate.validate('{"extra": [1], "name": "x", "also": 2}', '{"properties": {"name": {"type": "string"}}, "additionalProperties": false}')$$,
                  $$VALUES (false, '[{"path": "$.also", "error": "property \"also\" is not allowed (additionalProperties is false)"}, {"path": "$.extra", "error": "property \"extra\" is not allowed (additionalProperties is false)"}]'::jsonb)$$,
                  'additionalProperties false names each extra property');
SELECT results_eq($$SELECT * FROM idemgate.validate('{}', '{"additionalProperties": false}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'an empty object with additionalProperties false');
SELECT results_eq($$SELECT * FROM idemgate.validate('{"a": 1}', '{"additionalProperties": false}')$$,
                  $$VALUES (false, '[{"path": "$.a", "error": "property \"a\" is not allowed (additionalProperties is false)"}]'::jsonb)$$,
                  'no properties declared, one given');
-- Object keywords only constrain objects; a required null member is present.
SELECT results_eq($$SELECT * FROM idemgate.validate('[{"a": 1}]', '{"required": ["b"], "additionalProperties": false}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'object keywords ignore an array');
SELECT results_eq($$SELECT * FROM idemgate.validate('{"b": null}', '{"required": ["b"]}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'a null member is present');
-- Names that are not plain identifiers use bracket notation in paths.
SELECT results_eq($$SELECT * FROM idemgate.validate('{"first name": 1, "ok_1": 1, "1st": 1, "a\"b": 1, "": 1, "ü": 1}',
  '{"properties": {"first name": {"type": "string"}, "ok_1": {"type": "string"}, "1st": {"type": "string"},
                   "a\"b": {"type": "string"}, "": {"type": "string"}, "ü": {"type": "string"}}}')$$,
                  $$VALUES (false, '[{"path": "$[\"\"]", "error": "expected string, got number"}, {"path": "$[\"ü\"]", "error": "expected string, got number"}, {"path": "$[\"1st\"]", "error": "expected string, got number"}, {"path": "$[\"a\\\"b\"]", "error": "expected string, got number"}, {"path": "$.ok_1", "error": "expected string, got number"}, {"path": "$[\"first name\"]", "error": "expected string, got number"}]'::jsonb)$$,
                  'bracket notation for names that are not identifiers');
SELECT results_eq($$SELECT * FROM idemgate.validate('{}', '{"required": ["first name", "x"]}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "missing required property \"first name\""}, {"path": "$", "error": "missing required property \"x\""}]'::jsonb)$$,
                  'every missing property is named');

-- ---------------------------------------------------------------------
-- Arrays: items, minItems, maxItems.
SELECT results_eq($$SELECT v, (idemgate.validate(v::jsonb, '{"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}}')).*
  FROM (VALUES ('[]'), ('["a"]'), ('["a", "b", "c"]'), ('["a", "b", "c", "d"]'), ('["a", 2, "c", null]')) AS vs(v)$$,
                  $$VALUES ('[]'::text, false, '[{"path": "$", "error": "array has 0 items, fewer than the minimum of 1"}]'::jsonb),
                           ('["a"]'::text, true, '[]'::jsonb),
                           ('["a", "b", "c"]'::text, true, '[]'::jsonb),
                           ('["a", "b", "c", "d"]'::text, false, '[{"path": "$", "error": "array has 4 items, more than the maximum of 3"}]'::jsonb),
                           ('["a", 2, "c", null]'::text, false, '[{"path": "$", "error": "array has 4 items, more than the maximum of 3"}, {"path": "$[1]", "error": "expected string, got number"}, {"path": "$[3]", "error": "expected string, got null"}]'::jsonb)$$,
                  'items, minItems, maxItems');
SELECT results_eq($$SELECT * FROM idemgate.validate('[[1, 2], [3, "x"], []]', '{"items": {"items": {"type": "integer"}, "minItems": 1}}')$$,
                  $$VALUES (false, '[{"path": "$[1][1]", "error": "expected integer, got string"}, {"path": "$[2]", "error": "array has 0 items, fewer than the minimum of 1"}]'::jsonb)$$,
                  'nested items');

-- ---------------------------------------------------------------------
-- Nested paths, and every error collected in document order: a node's own
-- errors first, then its members (jsonb key order) or elements (index order).
-- An order with errors at every level, and its schema.
CREATE TEMP TABLE order_case (doc, s) AS VALUES (
  '{"customer": {"name": "", "emails": ["a@x.org", 7, "bad"]},
    "lines": [{"sku": "A-1", "qty": 2}, {"sku": "b", "qty": 0.5}, {"qty": 99}],
    "total": -1, "note": "ok"}'::jsonb,
  '{"type": "object", "additionalProperties": false, "required": ["customer", "lines", "total", "currency"],
    "properties": {
      "customer": {"type": "object", "required": ["name", "phone"], "properties": {
          "name": {"type": "string", "minLength": 1},
          "emails": {"type": "array", "maxItems": 2, "items": {"type": "string", "pattern": "@"}}}},
      "lines": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"], "properties": {
          "sku": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"},
          "qty": {"type": "integer", "minimum": 1, "maximum": 10}}}},
      "total": {"type": "number", "minimum": 0},
      "currency": {"enum": ["EUR", "USD"]}}}'::jsonb);
SELECT results_eq($$SELECT e->>'path' AS path, e->>'error' AS error
  FROM order_case, idemgate.validate(doc, s) AS r,
  LATERAL jsonb_array_elements(r.errors) WITH ORDINALITY AS x(e, n)
 ORDER BY n$$,
                  $$VALUES ('$'::text, 'missing required property "currency"'::text),
                           ('$.note'::text, 'property "note" is not allowed (additionalProperties is false)'::text),
                           ('$.lines[1].qty'::text, 'expected integer, got number'::text),
                           ('$.lines[1].qty'::text, '0.5 is less than the minimum of 1'::text),
                           ('$.lines[1].sku'::text, 'string does not match the pattern "^[A-Z]-[0-9]+$"'::text),
                           ('$.lines[2]'::text, 'missing required property "sku"'::text),
                           ('$.lines[2].qty'::text, '99 is greater than the maximum of 10'::text),
                           ('$.total'::text, '-1 is less than the minimum of 0'::text),
                           ('$.customer'::text, 'missing required property "phone"'::text),
                           ('$.customer.name'::text, 'string has 0 characters, fewer than the minimum of 1'::text),
                           ('$.customer.emails'::text, 'array has 3 items, more than the maximum of 2'::text),
                           ('$.customer.emails[1]'::text, 'expected string, got number'::text),
                           ('$.customer.emails[2]'::text, 'string does not match the pattern "@"'::text)$$,
                  'every error, in document order');
-- The same call's summary: not valid, 13 errors.
SELECT results_eq($$SELECT r.valid, jsonb_array_length(r.errors) FROM order_case, idemgate.validate(doc, s) AS r$$,
                  $$VALUES (false, 13::int)$$,
                  'not valid, 13 errors');
-- Several keywords failing on one value are all reported.
SELECT results_eq($$SELECT * FROM idemgate.validate('"toolong"', '{"type": "string", "maxLength": 3, "pattern": "^[0-9]+$", "enum": ["1"], "const": "1"}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "value is not one of [\"1\"]"}, {"path": "$", "error": "value must be \"1\""}, {"path": "$", "error": "string has 7 characters, more than the maximum of 3"}, {"path": "$", "error": "string does not match the pattern \"^[0-9]+$\""}]'::jsonb)$$,
                  'every failing keyword of one value');
SELECT results_eq($$SELECT * FROM idemgate.validate('7', '{"type": "string", "enum": ["a"]}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "expected string, got number"}, {"path": "$", "error": "value is not one of [\"a\"]"}]'::jsonb)$$,
                  'type and enum both reported');

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
SELECT results_eq($$SELECT r.* FROM ticket_schema,
  idemgate.validate('{"category": "billing", "priority": 2, "summary": "Customer was charged twice", "tags": ["refund", "card"]}', s) r$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'a good answer');
-- priority 3.0 is an integer; an empty tags list is fine.
SELECT results_eq($$SELECT r.* FROM ticket_schema,
  idemgate.validate('{"category": "bug", "priority": 3.0, "summary": "x", "tags": []}', s) r$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'priority 3.0, no tags');
-- A typical bad answer: wrong enum, priority as text, long summary,
-- too many tags (one not a string), an invented field, no errors hidden.
SELECT results_eq($$SELECT r.errors, r.valid FROM ticket_schema,
  idemgate.validate(jsonb_build_object(
      'category', 'Billing', 'priority', '2', 'summary', repeat('é', 201),
      'tags', '["a", "b", "c", "d", "e", 6]'::jsonb, 'confidence', 0.9), s) r$$,
                  $$VALUES ('[
    {
        "path": "$.tags",
        "error": "array has 6 items, more than the maximum of 5"
    },
    {
        "path": "$.tags[5]",
        "error": "expected string, got number"
    },
    {
        "path": "$.summary",
        "error": "string has 201 characters, more than the maximum of 200"
    },
    {
        "path": "$.category",
        "error": "value is not one of [\"billing\", \"bug\", \"feature\", \"other\"]"
    },
    {
        "path": "$.priority",
        "error": "expected integer, got string"
    },
    {
        "path": "$.confidence",
        "error": "property \"confidence\" is not allowed (additionalProperties is false)"
    }
]'::jsonb, false)$$,
                  'a typical bad answer: every error');
-- Priority out of range on both sides; the model forgot two fields.
SELECT results_eq($$SELECT r.* FROM ticket_schema, idemgate.validate('{"category": "other", "priority": 0}', s) r$$,
                  $$VALUES (false, '[{"path": "$", "error": "missing required property \"summary\""}, {"path": "$", "error": "missing required property \"tags\""}, {"path": "$.priority", "error": "0 is less than the minimum of 1"}]'::jsonb)$$,
                  'priority 0, two fields missing');
SELECT results_eq($$SELECT r.* FROM ticket_schema, idemgate.validate('{"category": "other", "priority": 6, "summary": "s", "tags": ["x"]}', s) r$$,
                  $$VALUES (false, '[{"path": "$.priority", "error": "6 is greater than the maximum of 5"}]'::jsonb)$$,
                  'priority 6');
-- Not even an object.
SELECT results_eq($$SELECT r.* FROM ticket_schema, idemgate.validate('"I think this is a billing issue"', s) r$$,
                  $$VALUES (false, '[{"path": "$", "error": "expected object, got string"}]'::jsonb)$$,
                  'not even an object');

-- ---------------------------------------------------------------------
-- Annotations are accepted and ignored anywhere (their values are not schemas).
SELECT results_eq($$SELECT * FROM idemgate.validate('5', '{"title": 1, "description": ["x"], "default": {"oneOf": 1}, "examples": [{"$ref": "#"}], "$id": "x", "$schema": null}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'annotations are ignored');
-- Property names that look like keywords are just names.
SELECT results_eq($$SELECT * FROM idemgate.validate('{"format": 1, "oneOf": "x"}', '{"properties": {"format": {"type": "integer"}, "oneOf": {"type": "integer"}}}')$$,
                  $$VALUES (false, '[{"path": "$.oneOf", "error": "expected integer, got string"}]'::jsonb)$$,
                  'property names that look like keywords');

-- Unsupported keywords are an error of the call (22023), wherever they are.
SELECT throws_ok($$SELECT idemgate.validate('1', '{"oneOf": [{"type": "string"}]}')$$, '22023', 'unsupported JSON Schema keyword "oneOf" in argument "schema" at $', 'oneOf is unsupported');
SELECT throws_ok($$SELECT idemgate.validate('1', '{"type": "string", "format": "email"}')$$, '22023', 'unsupported JSON Schema keyword "format" in argument "schema" at $', 'format is unsupported');
SELECT throws_ok($$SELECT idemgate.validate('1', '{"$ref": "#/definitions/x"}')$$, '22023', 'unsupported JSON Schema keyword "$ref" in argument "schema" at $', '$ref is unsupported');
SELECT throws_ok($$SELECT idemgate.validate('1', '{"properties": {"a": {"type": "string", "exclusiveMinimum": 0}}}')$$, '22023', 'unsupported JSON Schema keyword "exclusiveMinimum" in argument "schema" at $.properties.a', 'exclusiveMinimum is unsupported, with its path');
SELECT throws_ok($$SELECT idemgate.validate('1', '{"properties": {"first name": {"items": {"anyOf": []}}}}')$$, '22023', 'unsupported JSON Schema keyword "anyOf" in argument "schema" at $.properties["first name"].items', 'anyOf is unsupported, with a bracketed path');
SELECT throws_ok($$SELECT idemgate.validate('1', '{"Type": "string"}')$$, '22023', 'unsupported JSON Schema keyword "Type" in argument "schema" at $', 'keywords are case-sensitive');
-- ... even when the output never reaches that part of the schema.
SELECT throws_ok($$SELECT idemgate.validate('"x"', '{"items": {"uniqueItems": true}}')$$, '22023', 'unsupported JSON Schema keyword "uniqueItems" in argument "schema" at $.items', 'unsupported even where the output never goes');
-- The detail says why; the hint lists what is supported.
SELECT throws_ok($$SELECT idemgate.validate('1', '{"format": "date"}')$$, '22023',
                 'unsupported JSON Schema keyword "format" in argument "schema" at $', 'format: 22023');
SELECT is(pg_temp.detail_of($$SELECT idemgate.validate('1', '{"format": "date"}')$$),
          'idemgate.validate implements a subset of JSON Schema and refuses keywords it would otherwise ignore.',
          'the detail says why');
SELECT is(pg_temp.hint_of($$SELECT idemgate.validate('1', '{"format": "date"}')$$),
          'Supported keywords: type, properties, required, additionalProperties, enum, const, minLength, maxLength, minimum, maximum, items, minItems, maxItems, pattern. Accepted and ignored annotations: $schema, $id, title, description, default, examples.',
          'the hint lists what is supported');

-- Malformed schemas are 22023 too; the detail says why. The three "no error"
-- rows are boundaries that are valid: the largest count, 2.0 as a count, and
-- an empty required list.
CREATE TEMP TABLE bad_schemas (s, code, m, d) AS VALUES
    ('5', '22023', 'invalid JSON Schema in argument "schema" at $', 'A schema must be a JSON object, got number.'),
    ('[]', '22023', 'invalid JSON Schema in argument "schema" at $', 'A schema must be a JSON object, got array.'),
    ('"string"', '22023', 'invalid JSON Schema in argument "schema" at $', 'A schema must be a JSON object, got string.'),
    ('true', '22023', 'invalid JSON Schema in argument "schema" at $', 'A schema must be a JSON object, got boolean.'),
    ('{"type": "banana"}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', 'Unknown type "banana"; the types are object, array, string, number, integer, boolean, null.'),
    ('{"type": 1}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', '"type" must be a type name or a non-empty array of type names (object, array, string, number, integer, boolean, null).'),
    ('{"type": []}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', '"type" must be a type name or a non-empty array of type names (object, array, string, number, integer, boolean, null).'),
    ('{"type": ["string", 1]}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', '"type" arrays must hold type names, but one is a number.'),
    ('{"type": ["string", "string"]}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', 'Type "string" is listed twice.'),
    ('{"type": ["string", "float"]}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $', 'Unknown type "float"; the types are object, array, string, number, integer, boolean, null.'),
    ('{"minLength": -1}', '22023', 'invalid JSON Schema keyword "minLength" in argument "schema" at $', '"minLength" must be an integer between 0 and 2147483647, got -1.'),
    ('{"maxLength": 1.5}', '22023', 'invalid JSON Schema keyword "maxLength" in argument "schema" at $', '"maxLength" must be an integer between 0 and 2147483647, got 1.5.'),
    ('{"minItems": "3"}', '22023', 'invalid JSON Schema keyword "minItems" in argument "schema" at $', '"minItems" must be an integer between 0 and 2147483647, got string.'),
    ('{"maxItems": 2147483648}', '22023', 'invalid JSON Schema keyword "maxItems" in argument "schema" at $', '"maxItems" must be an integer between 0 and 2147483647, got 2147483648.'),
    ('{"minimum": "1"}', '22023', 'invalid JSON Schema keyword "minimum" in argument "schema" at $', '"minimum" must be a number, got string.'),
    ('{"maximum": null}', '22023', 'invalid JSON Schema keyword "maximum" in argument "schema" at $', '"maximum" must be a number, got null.'),
    ('{"required": "name"}', '22023', 'invalid JSON Schema keyword "required" in argument "schema" at $', '"required" must be an array of property names, got string.'),
    ('{"required": ["a", 1]}', '22023', 'invalid JSON Schema keyword "required" in argument "schema" at $', '"required" must be an array of property names, but it holds a number.'),
    ('{"required": ["a", "b", "a"]}', '22023', 'invalid JSON Schema keyword "required" in argument "schema" at $', 'Property "a" is listed twice.'),
    ('{"additionalProperties": {}}', '22023', 'invalid JSON Schema keyword "additionalProperties" in argument "schema" at $', '"additionalProperties" must be true or false, got object; a schema there is not supported.'),
    ('{"additionalProperties": "false"}', '22023', 'invalid JSON Schema keyword "additionalProperties" in argument "schema" at $', '"additionalProperties" must be true or false, got string; a schema there is not supported.'),
    ('{"properties": []}', '22023', 'invalid JSON Schema keyword "properties" in argument "schema" at $', '"properties" must be an object mapping names to schemas, got array.'),
    ('{"properties": {"a": 1}}', '22023', 'invalid JSON Schema in argument "schema" at $.properties.a', 'A schema must be a JSON object, got number.'),
    ('{"properties": {"a": {"type": "x"}}}', '22023', 'invalid JSON Schema keyword "type" in argument "schema" at $.properties.a', 'Unknown type "x"; the types are object, array, string, number, integer, boolean, null.'),
    ('{"items": [{"type": "string"}]}', '22023', 'invalid JSON Schema keyword "items" in argument "schema" at $', '"items" must be one schema object; the array (tuple) form is not supported.'),
    ('{"items": true}', '22023', 'invalid JSON Schema in argument "schema" at $.items', 'A schema must be a JSON object, got boolean.'),
    ('{"items": {"items": {"minItems": -2}}}', '22023', 'invalid JSON Schema keyword "minItems" in argument "schema" at $.items.items', '"minItems" must be an integer between 0 and 2147483647, got -2.'),
    ('{"enum": []}', '22023', 'invalid JSON Schema keyword "enum" in argument "schema" at $', '"enum" must be a non-empty array of allowed values.'),
    ('{"enum": "a"}', '22023', 'invalid JSON Schema keyword "enum" in argument "schema" at $', '"enum" must be a non-empty array of allowed values.'),
    ('{"pattern": "("}', '22023', 'invalid JSON Schema keyword "pattern" in argument "schema" at $', '"(" is not a valid regular expression: parentheses () not balanced.'),
    ('{"pattern": "[z-a]"}', '22023', 'invalid JSON Schema keyword "pattern" in argument "schema" at $', '"[z-a]" is not a valid regular expression: invalid character range.'),
    ('{"pattern": 5}', '22023', 'invalid JSON Schema keyword "pattern" in argument "schema" at $', '"pattern" must be a string holding a regular expression, got number.'),
    ('{"pattern": "a{2,1}"}', '22023', 'invalid JSON Schema keyword "pattern" in argument "schema" at $', '"a{2,1}" is not a valid regular expression: invalid repetition count(s).');
SELECT throws_ok(format('SELECT idemgate.validate(%L, %L)', '"x"', s), code, m, 'schema ' || s) FROM bad_schemas;
SELECT is(pg_temp.detail_of(format('SELECT idemgate.validate(%L, %L)', '"x"', s)), d, 'schema ' || s || ': the detail') FROM bad_schemas;
SELECT lives_ok(format('SELECT idemgate.validate(%L, %L)', '"x"', s), 'schema ' || s || ' is valid') FROM (VALUES ('{"minLength": 2147483647}'), ('{"maxItems": 2.0}'), ('{"required": []}')) AS t(s);

-- NULL arguments are 22004, naming the argument; a JSON null is a value.
SELECT throws_ok($$SELECT idemgate.validate(NULL, '{}')$$, '22004', 'argument "output" must not be NULL', 'a NULL output');
SELECT throws_ok($$SELECT idemgate.validate('1', NULL)$$, '22004', 'argument "schema" must not be NULL', 'a NULL schema');
SELECT throws_ok($$SELECT idemgate.validate(NULL, NULL)$$, '22004', 'argument "output" must not be NULL', 'both NULL: the output is named');
SELECT results_eq($$SELECT * FROM idemgate.validate('null', '{"type": "null"}')$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'a JSON null is a value');
SELECT results_eq($$SELECT * FROM idemgate.validate('null', '{"type": "object"}')$$,
                  $$VALUES (false, '[{"path": "$", "error": "expected object, got null"}]'::jsonb)$$,
                  'a JSON null is not an object');

-- ---------------------------------------------------------------------
-- Depth: the output's own depth costs nothing (recursion follows the schema).
SELECT results_eq($$SELECT r.valid, r.errors
  FROM idemgate.validate((repeat('[', 10000) || repeat(']', 10000))::jsonb, '{"type": "array", "minItems": 1, "items": {"type": "array"}}') r$$,
                  $$VALUES (true, '[]'::jsonb)$$,
                  'a deep output, a shallow schema');
SELECT results_eq($$SELECT r.valid, r.errors
  FROM idemgate.validate((repeat('[', 10000) || repeat(']', 10000))::jsonb, '{"const": []}') r$$,
                  $$VALUES (false, '[{"path": "$", "error": "value must be []"}]'::jsonb)$$,
                  'a deep output against const');
-- A deep output compared with enum/const works (jsonb equality, no recursion).
SELECT results_eq($$SELECT r.valid FROM idemgate.validate((repeat('[', 5000) || repeat(']', 5000))::jsonb,
    jsonb_build_object('enum', jsonb_build_array(0, (repeat('[', 5000) || repeat(']', 5000))::jsonb))) r$$,
                  $$VALUES (true)$$,
                  'a deep output in an enum');
-- Deep schemas validate up to the limit, with exact paths...
SELECT results_eq($$SELECT r.valid, pg_catalog.length(r.errors->0->>'path') AS path_length, r.errors->0->>'error' AS error
  FROM idemgate.validate((repeat('[', 1001) || '"x"' || repeat(']', 1001))::jsonb,
    (repeat('{"items": ', 1000) || '{"type": "integer"}' || repeat('}', 1000))::jsonb) r$$,
                  $$VALUES (false, 3001::int, 'expected integer, got array'::text)$$,
                  'a schema 1000 levels deep');
-- ... and beyond it the call fails cleanly.
SELECT throws_ok(format('SELECT idemgate.validate(%L, %L)', '[]',
    repeat('{"items": ', 1001) || '{}' || repeat('}', 1001)), '22023', 'argument "schema" is nested more than 1000 levels deep', '1001 levels');
SELECT throws_ok(format('SELECT idemgate.validate(%L, %L)', '[]',
    repeat('{"items": ', 10000) || '{}' || repeat('}', 10000)), '22023', 'argument "schema" is nested more than 1000 levels deep', '10000 levels');
SELECT throws_ok(format('SELECT idemgate.validate(%L, %L)', '{}',
    repeat('{"properties": {"a": ', 5000) || '{}' || repeat('}}', 5000)), '22023', 'argument "schema" is nested more than 1000 levels deep', '5000 levels of properties');

-- Many errors are all collected.
SELECT results_eq($$SELECT valid, jsonb_array_length(errors), errors->0, errors->9999
  FROM idemgate.validate((SELECT jsonb_agg(i) FROM generate_series(1, 10000) i), '{"items": {"type": "string"}}')$$,
                  $$VALUES (false, 10000::int, '{"path": "$[0]", "error": "expected string, got number"}'::jsonb, '{"path": "$[9999]", "error": "expected string, got number"}'::jsonb)$$,
                  '10000 errors, all collected');


-- Privileges: not executable by PUBLIC; the client bundle may call it.
CREATE ROLE validate_client;
CREATE ROLE validate_nobody;
SELECT idemgate.grant_role('validate_client', 'client') \g /dev/null
SELECT results_eq($$SELECT b.bundle FROM idemgate.bundle_members b
 WHERE b.fn::regprocedure = 'idemgate.validate(jsonb,jsonb)'::regprocedure ORDER BY 1$$,
                  $$VALUES ('client'::text),
                           ('operator'::text)$$,
                  'validate is in the client and operator bundles');
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'public', ARRAY[]::text[], 'PUBLIC may not execute validate');
SELECT function_privs_are('idemgate', 'validate', ARRAY['jsonb', 'jsonb'], 'validate_client', ARRAY['EXECUTE'], 'the client may');
\i test/sql/include/as_role.psql
SELECT is(pg_temp.as_role('validate_client', $q$SELECT row(valid, errors)::text FROM idemgate.validate('{"id": 1}', '{"required": ["id"]}')$q$),
          '(t,[])', 'the client validates');
-- Even with the schema usable, a role without the bundle cannot execute it.
GRANT USAGE ON SCHEMA idemgate TO validate_nobody;
SELECT throws_ok($$SELECT pg_temp.as_role('validate_nobody', $q$SELECT idemgate.validate('1', '{}')$q$)$$, '42501', 'permission denied for function validate', 'a role without the bundle');
DROP OWNED BY validate_client, validate_nobody;
DROP ROLE validate_client;
DROP ROLE validate_nobody;

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
