/*-------------------------------------------------------------------------
 *
 * src/ledger/json_schema.c
 *	  The first pass of idemgate.validate() (design note in
 *	  src/ledger/validate.c): compile a JSON Schema into SchemaNodes,
 *	  refusing (22023) every keyword it does not implement and every
 *	  malformed one, so a schema that passes really constrains the output.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "core/args.h"
#include "core/doc_limits.h"
#include "core/pg_compat.h"
#include "ledger/json_schema.h"
#include "ledger/json_values.h"

/*
 * ------------------------------------------------------------------------
 * Pass 1: compiling (and thereby checking) the schema
 * ------------------------------------------------------------------------
 */

/* SchemaKeywordError raises 22023 for a malformed keyword value. */
pg_noreturn static void
SchemaKeywordError(const char *keyword, StringInfo path, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid JSON Schema keyword \"%s\" in argument \"schema\" at %s",
					keyword, path->data),
			 errdetail("%s", detail),
			 errhint("Correct the value of \"%s\" in the schema.", keyword)));
}

/* SchemaCount reads a non-negative integer keyword (minLength, ...). */
static int32
SchemaCount(const JsonbValue *v, const char *keyword, StringInfo path)
{
	bool		overflow = false;
	int32		result = -1;

	if (v->type == jbvNumeric && NumericIsIntegral(v->val.numeric))
		result = numeric_int4_opt_error(v->val.numeric, &overflow);

	if (v->type != jbvNumeric || overflow || result < 0)
		SchemaKeywordError(keyword, path,
						   psprintf("\"%s\" must be an integer between 0 and %d, got %s.",
									keyword, PG_INT32_MAX,
									v->type == jbvNumeric ?
									NumericText(v->val.numeric) : ValueTypeName(v)));
	return result;
}


/* CompileType reads "type": one type name or a non-empty array of them. */
static uint32
CompileType(const JsonbValue *v, StringInfo path)
{
	static const char *allowed = "object, array, string, number, integer, boolean, null";
	uint32		types = 0;

	if (v->type == jbvString)
	{
		types = TypeBit(v->val.string.val, v->val.string.len);
		if (types == 0)
			SchemaKeywordError("type", path,
							   psprintf("Unknown type %s; the types are %s.",
										ValueText(v), allowed));
		return types;
	}

	if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data) &&
		JsonContainerSize(v->val.binary.data) > 0)
	{
		JsonbIterator *it = JsonbIteratorInit(v->val.binary.data);
		JsonbValue	elem;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
		{
			uint32		bit;

			if (tok != WJB_ELEM)
				continue;
			if (elem.type != jbvString)
				SchemaKeywordError("type", path,
								   psprintf("\"type\" arrays must hold type names, "
											"but one is a %s.",
											ValueTypeName(&elem)));
			bit = TypeBit(elem.val.string.val, elem.val.string.len);
			if (bit == 0)
				SchemaKeywordError("type", path,
								   psprintf("Unknown type %s; the types are %s.",
											ValueText(&elem), allowed));
			if (types & bit)
				SchemaKeywordError("type", path,
								   psprintf("Type %s is listed twice.",
											ValueText(&elem)));
			types |= bit;
		}
		return types;
	}

	SchemaKeywordError("type", path,
					   psprintf("\"type\" must be a type name or a non-empty array of "
								"type names (%s).",
								allowed));
}

/* CheckPattern raises 22023 unless pattern compiles as a PostgreSQL regex. */
static void
CheckPattern(const char *pattern, int len, StringInfo path)
{
	pg_wchar   *wpattern = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(pattern, wpattern, len);
	regex_t		re;
	int			rc;

	/* Same flags and collation as the matching in ValidateString. */
	rc = pg_regcomp(&re, wpattern, wlen, REG_ADVANCED, C_COLLATION_OID);
	pfree(wpattern);
	if (rc == REG_OKAY)
	{
		pg_regfree(&re);
		return;
	}

	/* A cancel makes the engine give up; report that, not a bad pattern. */
	CHECK_FOR_INTERRUPTS();
	{
		char		msg[128];

		pg_regerror(rc, &re, msg, sizeof(msg));
		SchemaKeywordError("pattern", path,
						   psprintf("%s is not a valid regular expression: %s.",
									QuotedName(pattern, len), msg));
	}
}


/* CompileProperties reads "properties": an object of schemas. */
static void
CompileProperties(SchemaNode *node, const JsonbValue *v, StringInfo path, int depth)
{
	JsonbIterator *it;
	JsonbValue	member;
	JsonbIteratorToken tok;
	int			saved = path->len;

	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		SchemaKeywordError("properties", path,
						   psprintf("\"properties\" must be an object mapping names to "
									"schemas, got %s.",
									ValueTypeName(v)));

	node->props = palloc0(sizeof(SchemaProperty) *
						  Max(JsonContainerSize(v->val.binary.data), 1));
	node->nprops = 0;

	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &member, true)) != WJB_DONE)
	{
		SchemaProperty *prop;

		if (tok != WJB_KEY)
			continue;
		prop = &node->props[node->nprops++];
		prop->name = member.val.string.val;
		prop->len = member.val.string.len;

		tok = JsonbIteratorNext(&it, &member, true);
		Assert(tok == WJB_VALUE);

		appendStringInfoString(path, ".properties");
		AppendPathKey(path, prop->name, prop->len);
		prop->schema = CompileSchema(&member, path, depth + 1);
		TruncatePath(path, saved);
	}
}

/* CompileRequired reads "required": an array of distinct strings. */
static void
CompileRequired(SchemaNode *node, const JsonbValue *v, StringInfo path)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	JsonbValue *sorted;

	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		SchemaKeywordError("required", path,
						   psprintf("\"required\" must be an array of property names, got %s.",
									ValueTypeName(v)));

	node->required = palloc(sizeof(JsonbValue) *
							Max(JsonContainerSize(v->val.binary.data), 1));
	node->nrequired = 0;

	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvString)
			SchemaKeywordError("required", path,
							   psprintf("\"required\" must be an array of property names, "
										"but it holds a %s.",
										ValueTypeName(&elem)));
		node->required[node->nrequired++] = elem;
	}

	/* Names must be unique (JSON Schema says MUST). */
	sorted = palloc(sizeof(JsonbValue) * Max(node->nrequired, 1));
	memcpy(sorted, node->required, sizeof(JsonbValue) * node->nrequired);
	qsort(sorted, node->nrequired, sizeof(JsonbValue), CompareStringValues);
	for (int i = 1; i < node->nrequired; i++)
		if (CompareStringValues(&sorted[i - 1], &sorted[i]) == 0)
			SchemaKeywordError("required", path,
							   psprintf("Property %s is listed twice.",
										ValueText(&sorted[i])));
	pfree(sorted);
}

/* CompileKeyword records one keyword of a schema object in node. */
static void
CompileKeyword(SchemaNode *node, const char *kw, int kwlen,
			   const JsonbValue *v, StringInfo path, int depth)
{
	if (KeyIs(kw, kwlen, "type"))
		node->types = CompileType(v, path);
	else if (KeyIs(kw, kwlen, "properties"))
		CompileProperties(node, v, path, depth);
	else if (KeyIs(kw, kwlen, "required"))
		CompileRequired(node, v, path);
	else if (KeyIs(kw, kwlen, "additionalProperties"))
	{
		if (v->type != jbvBool)
			SchemaKeywordError("additionalProperties", path,
							   psprintf("\"additionalProperties\" must be true or false, "
										"got %s; a schema there is not supported.",
										ValueTypeName(v)));
		node->additionalProperties = v->val.boolean;
	}
	else if (KeyIs(kw, kwlen, "enum"))
	{
		if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
			JsonContainerSize(v->val.binary.data) == 0)
			SchemaKeywordError("enum", path,
							   "\"enum\" must be a non-empty array of allowed values.");
		node->enumValues = v->val.binary.data;
	}
	else if (KeyIs(kw, kwlen, "const"))
	{
		node->hasConst = true;
		node->constValue = *v;
	}
	else if (KeyIs(kw, kwlen, "minLength"))
		node->minLength = SchemaCount(v, "minLength", path);
	else if (KeyIs(kw, kwlen, "maxLength"))
		node->maxLength = SchemaCount(v, "maxLength", path);
	else if (KeyIs(kw, kwlen, "minItems"))
		node->minItems = SchemaCount(v, "minItems", path);
	else if (KeyIs(kw, kwlen, "maxItems"))
		node->maxItems = SchemaCount(v, "maxItems", path);
	else if (KeyIs(kw, kwlen, "minimum") || KeyIs(kw, kwlen, "maximum"))
	{
		bool		isMin = KeyIs(kw, kwlen, "minimum");

		if (v->type != jbvNumeric)
			SchemaKeywordError(isMin ? "minimum" : "maximum", path,
							   psprintf("\"%s\" must be a number, got %s.",
										isMin ? "minimum" : "maximum",
										ValueTypeName(v)));
		if (isMin)
			node->minimum = v->val.numeric;
		else
			node->maximum = v->val.numeric;
	}
	else if (KeyIs(kw, kwlen, "pattern"))
	{
		if (v->type != jbvString)
			SchemaKeywordError("pattern", path,
							   psprintf("\"pattern\" must be a string holding a regular "
										"expression, got %s.",
										ValueTypeName(v)));
		CheckPattern(v->val.string.val, v->val.string.len, path);
		node->pattern = cstring_to_text_with_len(v->val.string.val,
												 v->val.string.len);
	}
	else if (KeyIs(kw, kwlen, "items"))
	{
		int			saved = path->len;

		if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
			SchemaKeywordError("items", path,
							   "\"items\" must be one schema object; the array (tuple) form is "
							   "not supported.");
		appendStringInfoString(path, ".items");
		node->items = CompileSchema(v, path, depth + 1);
		TruncatePath(path, saved);
	}
	else if (KeyIs(kw, kwlen, "$schema") || KeyIs(kw, kwlen, "$id") ||
			 KeyIs(kw, kwlen, "title") || KeyIs(kw, kwlen, "description") ||
			 KeyIs(kw, kwlen, "default") || KeyIs(kw, kwlen, "examples"))
	{
		/* annotations: accepted, no meaning for validation */
	}
	else
	{
		char	   *short_kw = TruncateForMessage(pnstrdup(kw, kwlen));

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unsupported JSON Schema keyword %s in argument \"schema\" at %s",
						QuotedName(short_kw, strlen(short_kw)), path->data),
				 errdetail("idemgate.validate implements a subset of JSON Schema and refuses "
						   "keywords it would otherwise ignore."),
				 errhint("Supported keywords: %s. Accepted and ignored annotations: %s.",
						 SUPPORTED_KEYWORDS, ANNOTATION_KEYWORDS)));
	}
}

/* CompileSchema checks the schema object sv (at path) and compiles it. */
SchemaNode *
CompileSchema(const JsonbValue *sv, StringInfo path, int depth)
{
	SchemaNode *node;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	if (sv->type != jbvBinary || !JsonContainerIsObject(sv->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid JSON Schema in argument \"schema\" at %s", path->data),
				 errdetail("A schema must be a JSON object, got %s.", ValueTypeName(sv)),
				 errhint("Use {} to accept any value.")));

	if (depth > VALIDATE_MAX_SCHEMA_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"schema\" is nested more than %d levels deep",
						VALIDATE_MAX_SCHEMA_DEPTH),
				 errdetail("Schemas nest through \"properties\" and \"items\"; the limit keeps "
						   "validation bounded."),
				 errhint("Flatten the schema.")));

	node = palloc0(sizeof(SchemaNode));
	node->minLength = node->maxLength = -1;
	node->minItems = node->maxItems = -1;
	node->additionalProperties = true;

	it = JsonbIteratorInit(sv->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *kw;
		int			kwlen;

		if (tok != WJB_KEY)
			continue;
		kw = v.val.string.val;
		kwlen = v.val.string.len;
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		CompileKeyword(node, kw, kwlen, &v, path, depth);
	}
	return node;
}

