/*-------------------------------------------------------------------------
 *
 * src/ledger/validate.c
 *	  idemgate.validate(): check a model's JSON output against a JSON Schema
 *	  subset (README.md, "Functions"), collecting every violation with its path.
 *
 * Design note
 *
 * Two passes (the first in src/ledger/json_schema.c, the values both
 * read in src/ledger/json_values.c).  CompileSchema first walks the whole schema, whatever the
 * output, and turns every schema object into a SchemaNode.  Any keyword we
 * do not implement, and any malformed one (minLength: -1, type: "banana",
 * an invalid regex, ...), is an ERROR of the call with SQLSTATE 22023: a
 * keyword is never silently ignored, so a schema that "passes" here really
 * constrains the output.  Only the annotations $schema, $id, title,
 * description, default and examples are accepted without meaning.
 *
 * ValidateValue then walks the output along the compiled schema.  Errors are
 * collected, not thrown: each becomes {"path": ..., "error": ...} in a jsonb
 * array, in document order (a node's own errors, then its members in jsonb
 * key order or its elements in index order).  Paths use "$" for the root,
 * ".name" for identifier-like member names, ["any name"] (JSON-quoted)
 * otherwise, and [i] for array elements.
 *
 * Safety: recursion follows the schema only (never the output's own depth),
 * is bounded by VALIDATE_MAX_SCHEMA_DEPTH and guarded by check_stack_depth();
 * loops call CHECK_FOR_INTERRUPTS().  Comparisons use jsonb's own semantics:
 * numbers with numeric_cmp (no float rounding), enum/const with
 * compareJsonbContainers.  Regexes are PostgreSQL's ARE engine (as `~`) with
 * the C collation; they are syntax-checked at compile time with pg_regcomp,
 * which reports errors by return code (so we can raise 22023 instead of the
 * engine's 2201B), and matched through the backend's regex cache.  All work
 * happens in a private memory context; only the errors array is copied out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "core/args.h"
#include "core/doc_limits.h"
#include "core/pg_compat.h"
#include "ledger/json_schema.h"
#include "ledger/json_values.h"
#include "ledger/validate.h"

/* What ValidateValue carries down the output. */
typedef struct ValidateState
{
	StringInfoData path;		/* path of the value being checked */
	JsonbParseState *errors;	/* the errors array under construction */
	int			nerrors;
} ValidateState;

PG_FUNCTION_INFO_V1(idemgate_validate);

/*
 * ------------------------------------------------------------------------
 * Pass 2: validating the output
 * ------------------------------------------------------------------------
 */

/* AddError appends {"path": <current path>, "error": <message>}. */
static void
pg_attribute_printf(2, 3)
AddError(ValidateState *st, const char *fmt,...)
{
	StringInfoData msg;
	JsonbValue	v;

	initStringInfo(&msg);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}

	pushJsonbValue(&st->errors, WJB_BEGIN_OBJECT, NULL);

	v.type = jbvString;
	v.val.string.val = "path";
	v.val.string.len = 4;
	pushJsonbValue(&st->errors, WJB_KEY, &v);
	v.val.string.val = pstrdup(st->path.data);
	v.val.string.len = st->path.len;
	pushJsonbValue(&st->errors, WJB_VALUE, &v);

	v.val.string.val = "error";
	v.val.string.len = 5;
	pushJsonbValue(&st->errors, WJB_KEY, &v);
	v.val.string.val = msg.data;
	v.val.string.len = msg.len;
	pushJsonbValue(&st->errors, WJB_VALUE, &v);

	pushJsonbValue(&st->errors, WJB_END_OBJECT, NULL);
	st->nerrors++;
}

/*
 * CheckCount adds an error when a value (what: "string") has fewer than
 * min or more than max of its units (unit: "character"); a bound below 0
 * is none.
 */
static void
CheckCount(ValidateState *st, const char *what, const char *unit, int n, int min, int max)
{
	const char *plural = n == 1 ? "" : "s";

	if (min >= 0 && n < min)
		AddError(st, "%s has %d %s%s, fewer than the minimum of %d", what, n, unit, plural, min);
	if (max >= 0 && n > max)
		AddError(st, "%s has %d %s%s, more than the maximum of %d", what, n, unit, plural, max);
}

/* TypeMatches tells whether value is one of the VT_* types in mask. */
static bool
TypeMatches(uint32 mask, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return (mask & VT_NULL) != 0;
		case jbvBool:
			return (mask & VT_BOOLEAN) != 0;
		case jbvString:
			return (mask & VT_STRING) != 0;
		case jbvNumeric:
			if (mask & VT_NUMBER)
				return true;
			return (mask & VT_INTEGER) != 0 && NumericIsIntegral(v->val.numeric);
		case jbvBinary:
			if (JsonContainerIsObject(v->val.binary.data))
				return (mask & VT_OBJECT) != 0;
			return (mask & VT_ARRAY) != 0;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return false;				/* keep compiler quiet */
}

/* InEnum tells whether value equals one element of the enum array. */
static bool
InEnum(JsonbContainer *values, const JsonbValue *v)
{
	JsonbIterator *it = JsonbIteratorInit(values);
	JsonbValue	elem;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM && JsonValuesEqual(&elem, v))
			return true;		/* the abandoned iterator is just memory */
	}
	return false;
}

/* FindProperty looks name up in the schema's "properties" (binary search). */
static SchemaProperty *
FindProperty(SchemaNode *schema, const char *name, int len)
{
	int			lo = 0;
	int			hi = schema->nprops - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		SchemaProperty *prop = &schema->props[mid];
		int			cmp = CompareKeys(name, len, prop->name, prop->len);

		if (cmp == 0)
			return prop;
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

static void ValidateValue(ValidateState *st, SchemaNode *schema, const JsonbValue *v);

/* ValidateString applies minLength, maxLength (characters) and pattern. */
static void
ValidateString(ValidateState *st, SchemaNode *schema, const JsonbValue *v)
{
	const char *str = v->val.string.val;
	int			len = v->val.string.len;

	if (schema->minLength >= 0 || schema->maxLength >= 0)
	{
		int			nchars = pg_mbstrlen_with_len(str, len);

		CheckCount(st, "string", "character", nchars, schema->minLength, schema->maxLength);
	}

	if (schema->pattern != NULL &&
		!RE_compile_and_execute(schema->pattern, (char *) str, len,
								REG_ADVANCED, C_COLLATION_OID, 0, NULL))
		AddError(st, "string does not match the pattern %s",
				 QuotedName(VARDATA_ANY(schema->pattern),
							VARSIZE_ANY_EXHDR(schema->pattern)));
}

/* ValidateNumber applies minimum and maximum (inclusive, exact). */
static void
ValidateNumber(ValidateState *st, SchemaNode *schema, const JsonbValue *v)
{
	Numeric		n = v->val.numeric;

	if (schema->minimum != NULL && NumericCompare(n, schema->minimum) < 0)
		AddError(st, "%s is less than the minimum of %s",
				 NumericText(n), NumericText(schema->minimum));
	if (schema->maximum != NULL && NumericCompare(n, schema->maximum) > 0)
		AddError(st, "%s is greater than the maximum of %s",
				 NumericText(n), NumericText(schema->maximum));
}

/* ValidateObject applies required, then properties/additionalProperties. */
static void
ValidateObject(ValidateState *st, SchemaNode *schema, JsonbContainer *obj)
{
	for (int i = 0; i < schema->nrequired; i++)
	{
		JsonbValue *name = &schema->required[i];
		JsonbValue	found;

		if (getKeyJsonValueFromContainer(obj, name->val.string.val,
										 name->val.string.len, &found) == NULL)
			AddError(st, "missing required property %s", ValueText(name));
	}

	if (schema->nprops > 0 || !schema->additionalProperties)
	{
		JsonbIterator *it = JsonbIteratorInit(obj);
		JsonbValue	v;
		JsonbIteratorToken tok;
		int			saved = st->path.len;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			const char *name;
			int			len;
			SchemaProperty *prop;

			if (tok != WJB_KEY)
				continue;
			CHECK_FOR_INTERRUPTS();
			name = v.val.string.val;
			len = v.val.string.len;
			tok = JsonbIteratorNext(&it, &v, true);
			Assert(tok == WJB_VALUE);

			prop = FindProperty(schema, name, len);
			if (prop == NULL && schema->additionalProperties)
				continue;

			AppendPathKey(&st->path, name, len);
			if (prop != NULL)
				ValidateValue(st, prop->schema, &v);
			else
				AddError(st, "property %s is not allowed (additionalProperties is false)",
						 QuotedName(name, len));
			TruncatePath(&st->path, saved);
		}
	}
}

/* ValidateArray applies minItems, maxItems, then items to each element. */
static void
ValidateArray(ValidateState *st, SchemaNode *schema, JsonbContainer *arr)
{
	int			nitems = JsonContainerSize(arr);

	CheckCount(st, "array", "item", nitems, schema->minItems, schema->maxItems);

	if (schema->items != NULL)
	{
		JsonbIterator *it = JsonbIteratorInit(arr);
		JsonbValue	v;
		JsonbIteratorToken tok;
		int			saved = st->path.len;
		int			index = 0;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			CHECK_FOR_INTERRUPTS();
			appendStringInfo(&st->path, "[%d]", index++);
			ValidateValue(st, schema->items, &v);
			TruncatePath(&st->path, saved);
		}
	}
}

/* ValidateValue checks one output value (at st->path) against schema. */
static void
ValidateValue(ValidateState *st, SchemaNode *schema, const JsonbValue *v)
{
	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	if (schema->types != 0 && !TypeMatches(schema->types, v))
		AddError(st, "expected %s, got %s",
				 TypeListText(schema->types), ValueTypeName(v));

	if (schema->enumValues != NULL && !InEnum(schema->enumValues, v))
	{
		JsonbValue	allowed;

		allowed.type = jbvBinary;
		allowed.val.binary.data = schema->enumValues;
		allowed.val.binary.len = -1;
		AddError(st, "value is not one of %s", ValueText(&allowed));
	}

	if (schema->hasConst && !JsonValuesEqual(v, &schema->constValue))
		AddError(st, "value must be %s", ValueText(&schema->constValue));

	switch (v->type)
	{
		case jbvString:
			ValidateString(st, schema, v);
			break;
		case jbvNumeric:
			ValidateNumber(st, schema, v);
			break;
		case jbvBinary:
			if (JsonContainerIsObject(v->val.binary.data))
				ValidateObject(st, schema, v->val.binary.data);
			else
				ValidateArray(st, schema, v->val.binary.data);
			break;
		default:
			break;
	}
}

/*
 * ValidateJsonb checks output against schema; see validate.h.
 *
 * Compiling and checking happen in a private memory context, deleted before
 * returning; only the errors array is copied into the caller's context.
 */
bool
ValidateJsonb(Jsonb *output, Jsonb *schema, Jsonb **errors_out)
{
	MemoryContext callerContext = CurrentMemoryContext;
	MemoryContext workContext;
	ValidateState st;
	JsonbValue	root;
	JsonbValue *array;
	SchemaNode *compiled;
	Jsonb	   *errors;
	bool		valid;

	workContext = AllocSetContextCreate(callerContext, "idemgate validate",
										ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(workContext);

	initStringInfo(&st.path);
	appendStringInfoChar(&st.path, '$');
	st.errors = NULL;
	st.nerrors = 0;

	RootValue(schema, &root);
	compiled = CompileSchema(&root, &st.path, 0);

	pushJsonbValue(&st.errors, WJB_BEGIN_ARRAY, NULL);
	RootValue(output, &root);
	ValidateValue(&st, compiled, &root);
	array = pushJsonbValue(&st.errors, WJB_END_ARRAY, NULL);
	valid = (st.nerrors == 0);

	MemoryContextSwitchTo(callerContext);
	if (errors_out != NULL)
	{
		errors = JsonbValueToJsonb(array);
		*errors_out = (Jsonb *) palloc(VARSIZE(errors));
		memcpy(*errors_out, errors, VARSIZE(errors));
	}
	MemoryContextDelete(workContext);

	return valid;
}

/*
 * idemgate_validate is idemgate.validate(output jsonb, schema jsonb)
 * RETURNS TABLE(valid boolean, errors jsonb): always exactly one row.
 */
Datum
idemgate_validate(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	Jsonb	   *errors = NULL;
	bool		valid;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"output\" must not be NULL"),
				 errhint("Pass 'null'::jsonb to validate a JSON null.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"schema\" must not be NULL"),
				 errhint("Pass '{}'::jsonb to accept any value.")));

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	CheckDocumentArg(fcinfo, 0, "output");
	CheckDocumentArg(fcinfo, 1, "schema");
	valid = ValidateJsonb(PG_GETARG_JSONB_P(0), PG_GETARG_JSONB_P(1), &errors);

	values[0] = BoolGetDatum(valid);
	values[1] = JsonbPGetDatum(errors);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
