/*-------------------------------------------------------------------------
 *
 * src/ledger/validate.c
 *	  idemgate.validate(): check a model's JSON output against a JSON Schema
 *	  subset (README.md, "Functions"), collecting every violation with its path.
 *
 * Design note
 *
 * Two passes.  CompileSchema first walks the whole schema, whatever the
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
#include "ledger/validate.h"

/* How deeply schemas (properties / items) may nest. */
#define VALIDATE_MAX_SCHEMA_DEPTH 1000

#define SUPPORTED_KEYWORDS "type, properties, required, additionalProperties, " \
	"enum, const, minLength, maxLength, minimum, maximum, items, minItems, " \
	"maxItems, pattern"
#define ANNOTATION_KEYWORDS "$schema, $id, title, description, default, examples"

/* JSON Schema type names, as bits of SchemaNode.types. */
#define VT_OBJECT	0x01
#define VT_ARRAY	0x02
#define VT_STRING	0x04
#define VT_NUMBER	0x08
#define VT_INTEGER	0x10
#define VT_BOOLEAN	0x20
#define VT_NULL		0x40

static const struct
{
	uint32		bit;
	const char *name;
}			TypeNames[] =
{
	{VT_OBJECT, "object"},
	{VT_ARRAY, "array"},
	{VT_STRING, "string"},
	{VT_NUMBER, "number"},
	{VT_INTEGER, "integer"},
	{VT_BOOLEAN, "boolean"},
	{VT_NULL, "null"},
};

struct SchemaNode;

/* One entry of "properties". */
typedef struct SchemaProperty
{
	const char *name;			/* points into the schema jsonb */
	int			len;
	struct SchemaNode *schema;
} SchemaProperty;

/* A compiled schema object; absent keywords are 0 / -1 / NULL. */
typedef struct SchemaNode
{
	uint32		types;			/* VT_* bits; 0 = any type */
	JsonbContainer *enumValues; /* "enum" array */
	bool		hasConst;
	JsonbValue	constValue;		/* "const", scalar or jbvBinary */
	int32		minLength;		/* characters; -1 = absent */
	int32		maxLength;
	Numeric		minimum;		/* inclusive; NULL = absent */
	Numeric		maximum;
	text	   *pattern;		/* "pattern", already syntax-checked */
	int32		minItems;		/* -1 = absent */
	int32		maxItems;
	struct SchemaNode *items;	/* schema of every array element */
	int			nprops;
	SchemaProperty *props;		/* in jsonb key order (length, then bytes) */
	int			nrequired;
	JsonbValue *required;		/* jbvString names */
	bool		additionalProperties;	/* false only if given as false */
} SchemaNode;

/* What ValidateValue carries down the output. */
typedef struct ValidateState
{
	StringInfoData path;		/* path of the value being checked */
	JsonbParseState *errors;	/* the errors array under construction */
	int			nerrors;
} ValidateState;

PG_FUNCTION_INFO_V1(idemgate_validate);

/* KeyIs tells whether a jsonb key (not NUL-terminated) equals word. */
static inline bool
KeyIs(const char *key, int len, const char *word)
{
	return strlen(word) == (size_t) len && memcmp(key, word, len) == 0;
}

/* CompareKeys orders names like jsonb object keys: by length, then bytes. */
static int
CompareKeys(const char *a, int alen, const char *b, int blen)
{
	if (alen != blen)
		return (alen < blen) ? -1 : 1;
	return memcmp(a, b, alen);
}

/* CompareStringValues is a qsort comparator for jbvString values. */
static int
CompareStringValues(const void *a, const void *b)
{
	const JsonbValue *va = (const JsonbValue *) a;
	const JsonbValue *vb = (const JsonbValue *) b;

	return CompareKeys(va->val.string.val, va->val.string.len,
					   vb->val.string.val, vb->val.string.len);
}

/* IsPlainIdentifier tells whether name can follow a '.' in a path. */
static bool
IsPlainIdentifier(const char *name, int len)
{
	if (len == 0)
		return false;
	for (int i = 0; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
			  (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* AppendQuoted appends name as a JSON string literal. */
static void
AppendQuoted(StringInfo buf, const char *name, int len)
{
	char	   *s = pnstrdup(name, len);

	escape_json(buf, s);
	pfree(s);
}

/* QuotedName returns name as a palloc'd JSON string literal. */
static char *
QuotedName(const char *name, int len)
{
	StringInfoData buf;

	initStringInfo(&buf);
	AppendQuoted(&buf, name, len);
	return buf.data;
}

/* AppendPathKey appends the accessor of object member name to path. */
static void
AppendPathKey(StringInfo path, const char *name, int len)
{
	if (IsPlainIdentifier(name, len))
	{
		appendStringInfoChar(path, '.');
		appendBinaryStringInfo(path, name, len);
	}
	else
	{
		appendStringInfoChar(path, '[');
		AppendQuoted(path, name, len);
		appendStringInfoChar(path, ']');
	}
}

/* TruncatePath restores path to an earlier length. */
static inline void
TruncatePath(StringInfo path, int len)
{
	path->len = len;
	path->data[len] = '\0';
}

/* NumericIsIntegral tells whether n has no fractional part (3.0 has none). */
static bool
NumericIsIntegral(Numeric n)
{
	Datum		truncated = DirectFunctionCall2(numeric_trunc,
												NumericGetDatum(n),
												Int32GetDatum(0));

	return DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											 NumericGetDatum(n),
											 truncated)) == 0;
}

/* NumericCompare compares two numerics exactly. */
static int
NumericCompare(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											 NumericGetDatum(a),
											 NumericGetDatum(b)));
}

/* NumericText renders n as numeric_out does. */
static char *
NumericText(Numeric n)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n)));
}

/* ValueTypeName names the JSON type of a scalar or jbvBinary value. */
static const char *
ValueTypeName(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		case jbvArray:
			return "array";
		case jbvObject:
			return "object";
		case jbvBinary:
			return JsonContainerIsObject(v->val.binary.data) ? "object" : "array";
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return NULL;				/* keep compiler quiet */
}

/* ValueText renders a scalar or jbvBinary value as JSON text. */
static char *
ValueText(const JsonbValue *v)
{
	StringInfoData buf;

	switch (v->type)
	{
		case jbvNull:
			return pstrdup("null");
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvNumeric:
			return NumericText(v->val.numeric);
		case jbvString:
			return QuotedName(v->val.string.val, v->val.string.len);
		case jbvBinary:
			initStringInfo(&buf);
			JsonbToCString(&buf, v->val.binary.data, v->val.binary.len);
			return buf.data;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return NULL;				/* keep compiler quiet */
}

/* TypeListText renders a VT_* mask as "string or null". */
static char *
TypeListText(uint32 types)
{
	StringInfoData buf;
	int			total = 0;
	int			seen = 0;

	for (int i = 0; i < lengthof(TypeNames); i++)
		if (types & TypeNames[i].bit)
			total++;

	initStringInfo(&buf);
	for (int i = 0; i < lengthof(TypeNames); i++)
	{
		if (!(types & TypeNames[i].bit))
			continue;
		if (seen > 0)
			appendStringInfoString(&buf, seen == total - 1 ? " or " : ", ");
		appendStringInfoString(&buf, TypeNames[i].name);
		seen++;
	}
	return buf.data;
}

/* RootValue describes a whole jsonb document as one JsonbValue. */
static void
RootValue(Jsonb *jb, JsonbValue *out)
{
	if (JB_ROOT_IS_SCALAR(jb))
	{
		if (!JsonbExtractScalar(&jb->root, out))
			elog(ERROR, "could not extract scalar from jsonb");
	}
	else
	{
		out->type = jbvBinary;
		out->val.binary.data = &jb->root;
		out->val.binary.len = VARSIZE(jb) - VARHDRSZ;
	}
}

/* JsonValuesEqual compares two values with jsonb equality semantics. */
static bool
JsonValuesEqual(const JsonbValue *a, const JsonbValue *b)
{
	if (a->type != b->type)
		return false;

	switch (a->type)
	{
		case jbvNull:
			return true;
		case jbvBool:
			return a->val.boolean == b->val.boolean;
		case jbvNumeric:
			return NumericCompare(a->val.numeric, b->val.numeric) == 0;
		case jbvString:
			return a->val.string.len == b->val.string.len &&
				memcmp(a->val.string.val, b->val.string.val,
					   a->val.string.len) == 0;
		case jbvBinary:
			return compareJsonbContainers(a->val.binary.data,
										  b->val.binary.data) == 0;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) a->type);
	}
	return false;				/* keep compiler quiet */
}

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
									v->type == jbvNumeric ? NumericText(v->val.numeric) : ValueTypeName(v)));
	return result;
}

/* TypeBit maps a type name to its VT_* bit, or 0 when unknown. */
static uint32
TypeBit(const char *name, int len)
{
	for (int i = 0; i < lengthof(TypeNames); i++)
		if (KeyIs(name, len, TypeNames[i].name))
			return TypeNames[i].bit;
	return 0;
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
								   psprintf("\"type\" arrays must hold type names, but one is a %s.",
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
					   psprintf("\"type\" must be a type name or a non-empty array of type names (%s).",
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

static SchemaNode *CompileSchema(const JsonbValue *sv, StringInfo path, int depth);

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
						   psprintf("\"properties\" must be an object mapping names to schemas, got %s.",
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
							   psprintf("\"required\" must be an array of property names, but it holds a %s.",
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
							   psprintf("\"additionalProperties\" must be true or false, got %s; a schema there is not supported.",
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
							   psprintf("\"pattern\" must be a string holding a regular expression, got %s.",
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
							   "\"items\" must be one schema object; the array (tuple) form is not supported.");
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
				 errdetail("idemgate.validate implements a subset of JSON Schema and refuses keywords it would otherwise ignore."),
				 errhint("Supported keywords: %s. Accepted and ignored annotations: %s.",
						 SUPPORTED_KEYWORDS, ANNOTATION_KEYWORDS)));
	}
}

/* CompileSchema checks the schema object sv (at path) and compiles it. */
static SchemaNode *
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
				 errdetail("Schemas nest through \"properties\" and \"items\"; the limit keeps validation bounded."),
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

		if (schema->minLength >= 0 && nchars < schema->minLength)
			AddError(st, "string has %d character%s, fewer than the minimum of %d",
					 nchars, nchars == 1 ? "" : "s", schema->minLength);
		if (schema->maxLength >= 0 && nchars > schema->maxLength)
			AddError(st, "string has %d character%s, more than the maximum of %d",
					 nchars, nchars == 1 ? "" : "s", schema->maxLength);
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

	if (schema->minItems >= 0 && nitems < schema->minItems)
		AddError(st, "array has %d item%s, fewer than the minimum of %d",
				 nitems, nitems == 1 ? "" : "s", schema->minItems);
	if (schema->maxItems >= 0 && nitems > schema->maxItems)
		AddError(st, "array has %d item%s, more than the maximum of %d",
				 nitems, nitems == 1 ? "" : "s", schema->maxItems);

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
