/*-------------------------------------------------------------------------
 *
 * src/ledger/json_values.c
 *	  JSON values as idemgate.validate() sees them: jsonb key order, the
 *	  paths of its errors ("$", ".name", ["any name"], [i]), numbers with
 *	  numeric semantics, JSON Schema type names, and values as short text
 *	  for messages. Shared by the schema compiler (src/ledger/json_schema.c)
 *	  and the validation walk (src/ledger/validate.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "core/args.h"
#include "core/pg_compat.h"
#include "ledger/json_values.h"

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


/* CompareKeys orders names like jsonb object keys: by length, then bytes. */
int
CompareKeys(const char *a, int alen, const char *b, int blen)
{
	if (alen != blen)
		return (alen < blen) ? -1 : 1;
	return memcmp(a, b, alen);
}

/* CompareStringValues is a qsort comparator for jbvString values. */
int
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
char *
QuotedName(const char *name, int len)
{
	StringInfoData buf;

	initStringInfo(&buf);
	AppendQuoted(&buf, name, len);
	return buf.data;
}

/* AppendPathKey appends the accessor of object member name to path. */
void
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


/* NumericIsIntegral tells whether n has no fractional part (3.0 has none). */
bool
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
int
NumericCompare(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											 NumericGetDatum(a),
											 NumericGetDatum(b)));
}

/* NumericText renders n as numeric_out does. */
char *
NumericText(Numeric n)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n)));
}

/* ValueTypeName names the JSON type of a scalar or jbvBinary value. */
const char *
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
char *
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
char *
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
void
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
bool
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

/* TypeBit maps a type name to its VT_* bit, or 0 when unknown. */
uint32
TypeBit(const char *name, int len)
{
	for (int i = 0; i < lengthof(TypeNames); i++)
		if (KeyIs(name, len, TypeNames[i].name))
			return TypeNames[i].bit;
	return 0;
}
