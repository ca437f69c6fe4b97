/*-------------------------------------------------------------------------
 *
 * src/operations/request_forms.c
 *	  The one-jsonb-argument forms of the functions a workflow calls
 *	  (docs/n8n.md): claim, request_approval, peek_approval,
 *	  consume_approval, enqueue_effect, cas_transition, renew_lease, fail,
 *	  record_validation, claim_effects, complete_effect, fail_effect and
 *	  cancel_in_window.
 *
 * Design note. n8n's Postgres node pastes query parameters into the query
 * as literals, and splits a plain parameter list on commas, so a workflow
 * calls f($1::jsonb) with one parameter, JSON.stringify({...}). Each form
 * here is a table of fields named like the typed function's arguments
 * (one REQUEST_FORM line per form declares it and its SQL function):
 * the request is checked against it (unknown field → 22023, missing or
 * null required field → 22004, wrong JSON type or unparsable value →
 * 22023, each naming the field), missing optional fields take the typed
 * function's default, and the typed function is then called with the
 * same FunctionCallInfo context and result set. So results, errors
 * (ranges, states, ownership) and behaviour are the typed function's by
 * construction. Privileges are the typed function's bundle's
 * (idemgate--1.0--1.1.sql, part 20_n8n).
 *
 * Types as n8n sends them: bigint and integer fields accept a JSON number
 * or a string of digits (n8n's Postgres node returns bigint columns such as
 * version as strings); uuid fields a string; interval fields a string
 * ("5 minutes", "120") or a number of seconds; jsonb fields any JSON value.
 *
 * peek_approval's typed form gives no row for an unknown token; the jsonb
 * form gives one row with status "invalid" and every other column NULL, so
 * every single-row function answers exactly one row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "core/args.h"

/* Most arguments of any typed function with a request form. */
#define MAX_FORM_FIELDS 8

typedef enum FieldType
{
	FIELD_TEXT,
	FIELD_UUID,
	FIELD_BIGINT,
	FIELD_INTEGER,
	FIELD_INTERVAL,
	FIELD_JSONB,
	FIELD_BOOLEAN,
	FIELD_TEXT_ARRAY
} FieldType;

/* One argument of the typed function, as a field of the request. */
typedef struct FormField
{
	const char *name;
	FieldType	type;
	bool		required;
	const char *default_value;	/* the typed default's text; NULL = SQL NULL */
} FormField;

/* A typed function and its arguments, in order. */
typedef struct RequestForm
{
	const char *function;
	PGFunction	typed;
	int			nfields;
	FormField	fields[MAX_FORM_FIELDS];
} RequestForm;

#define REQ(n, t) {n, t, true, NULL}
#define OPT(n, t) {n, t, false, NULL}
#define DEF(n, t, d) {n, t, false, d}

static Datum CallWithRequest(FunctionCallInfo fcinfo, const RequestForm *form);

/*
 * FORM(name, fields...) declares the typed function idemgate_<name>,
 * defined in its own file, and its form, <name>_form: its arguments as
 * fields, in their order.
 */
#define FORM(name, ...) \
	extern PGDLLEXPORT Datum idemgate_##name(PG_FUNCTION_ARGS); \
	static const RequestForm name##_form = { \
		#name, idemgate_##name, lengthof(((const FormField[]) {__VA_ARGS__})), {__VA_ARGS__} \
	}

/*
 * REQUEST_FORM(name, fields...) declares a form and defines its
 * SQL-callable <name>(request jsonb), idemgate_<name>_request, which calls
 * the typed function through it.
 */
#define REQUEST_FORM(name, ...) \
	FORM(name, __VA_ARGS__); \
	extern PGDLLEXPORT Datum idemgate_##name##_request(PG_FUNCTION_ARGS); \
	Datum \
	idemgate_##name##_request(PG_FUNCTION_ARGS) \
	{ \
		return CallWithRequest(fcinfo, &name##_form); \
	} \
	PG_FUNCTION_INFO_V1(idemgate_##name##_request)

/* The forms; peek_approval's SQL-callable form is below (one row always). */
REQUEST_FORM(claim,
			 REQ("key", FIELD_TEXT), REQ("payload", FIELD_JSONB),
			 DEF("lease", FIELD_INTERVAL, "5 minutes"), OPT("workflow", FIELD_TEXT),
			 OPT("owner", FIELD_UUID), OPT("origin", FIELD_TEXT));
REQUEST_FORM(request_approval,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("effects", FIELD_JSONB), DEF("expires_in", FIELD_INTERVAL, "24 hours"),
			 OPT("card", FIELD_JSONB), OPT("audience", FIELD_TEXT_ARRAY),
			 OPT("requested_by", FIELD_TEXT));
FORM(peek_approval,
	 REQ("token", FIELD_TEXT));
REQUEST_FORM(consume_approval,
			 REQ("token", FIELD_TEXT), REQ("decision", FIELD_TEXT), REQ("approver", FIELD_TEXT),
			 OPT("reason", FIELD_TEXT));
REQUEST_FORM(enqueue_effect,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("effects", FIELD_JSONB));
REQUEST_FORM(cas_transition,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("new_state", FIELD_TEXT), OPT("result", FIELD_JSONB));
REQUEST_FORM(renew_lease,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("extend_by", FIELD_INTERVAL));
REQUEST_FORM(fail,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("error_class", FIELD_TEXT), OPT("error", FIELD_TEXT),
			 REQ("retryable", FIELD_BOOLEAN));
REQUEST_FORM(record_validation,
			 REQ("key", FIELD_TEXT), REQ("owner", FIELD_UUID), REQ("version", FIELD_BIGINT),
			 REQ("output", FIELD_JSONB), REQ("schema", FIELD_JSONB));
REQUEST_FORM(claim_effects,
			 REQ("effect_type", FIELD_TEXT), DEF("batch", FIELD_INTEGER, "10"),
			 DEF("lease", FIELD_INTERVAL, "1 minute"));
REQUEST_FORM(complete_effect,
			 REQ("effect_id", FIELD_UUID), REQ("owner", FIELD_UUID),
			 OPT("provider_id", FIELD_TEXT), OPT("status", FIELD_INTEGER));
REQUEST_FORM(fail_effect,
			 REQ("effect_id", FIELD_UUID), REQ("owner", FIELD_UUID),
			 REQ("error_class", FIELD_TEXT), OPT("error", FIELD_TEXT),
			 OPT("retry_after", FIELD_INTERVAL), OPT("status", FIELD_INTEGER));
REQUEST_FORM(cancel_in_window,
			 REQ("effect_id", FIELD_UUID), REQ("approver", FIELD_TEXT), OPT("reason", FIELD_TEXT));

/* FieldList renders the form's field names, "a, b and c", for messages. */
static char *
FieldList(const RequestForm *form)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < form->nfields; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, i == form->nfields - 1 ? " and " : ", ");
		appendStringInfoString(&buf, form->fields[i].name);
	}
	return buf.data;
}

/* FieldTypeName says what a field of type t must be, for messages. */
static const char *
FieldTypeName(FieldType t)
{
	switch (t)
	{
		case FIELD_TEXT:
			return "a JSON string";
		case FIELD_UUID:
			return "a UUID string";
		case FIELD_BIGINT:
		case FIELD_INTEGER:
			return "an integer (a JSON number or a string of digits)";
		case FIELD_INTERVAL:
			return "an interval (a string such as \"5 minutes\", or a number of seconds)";
		case FIELD_JSONB:
			return "a JSON value";
		case FIELD_BOOLEAN:
			return "a JSON boolean";
		case FIELD_TEXT_ARRAY:
			return "a JSON array of strings";
	}
	return "?";
}

/* ReportWrongType raises 22023 for a field of the wrong type or form. */
static void
ReportWrongType(const FormField *field, const char *value)
{
	if (value != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" of argument \"request\" must be %s, not \"%s\"",
						field->name, FieldTypeName(field->type), TruncateForMessage(value))));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("field \"%s\" of argument \"request\" must be %s",
					field->name, FieldTypeName(field->type))));
}

/*
 * ParseWithInput converts text with a type's input function, reporting bad
 * input as 22023 naming the field. Input functions only allocate and
 * raise, so catching their error without a subtransaction is safe.
 */
static Datum
ParseWithInput(const FormField *field, const char *str)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	volatile Datum result = (Datum) 0;
	volatile bool failed = false;

	PG_TRY();
	{
		switch (field->type)
		{
			case FIELD_UUID:
				result = DirectFunctionCall1(uuid_in, CStringGetDatum(str));
				break;
			case FIELD_BIGINT:
				result = DirectFunctionCall1(int8in, CStringGetDatum(str));
				break;
			case FIELD_INTEGER:
				result = DirectFunctionCall1(int4in, CStringGetDatum(str));
				break;
			case FIELD_INTERVAL:
				result = DirectFunctionCall3(interval_in, CStringGetDatum(str),
											 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
				break;
			default:
				elog(ERROR, "unexpected field type %d", (int) field->type);
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		FlushErrorState();
		failed = true;
	}
	PG_END_TRY();
	if (failed)
		ReportWrongType(field, str);
	return result;
}

/* TextArrayField converts a JSON array of strings to text[]. */
static Datum
TextArrayField(const FormField *field, JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	Datum	   *items;
	int			n = 0;
	int			max;

	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ReportWrongType(field, NULL);
	max = JsonContainerSize(v->val.binary.data);
	items = palloc(sizeof(Datum) * (max > 0 ? max : 1));
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvString)
			ReportWrongType(field, NULL);
		items[n++] = PointerGetDatum(cstring_to_text_with_len(elem.val.string.val,
															  elem.val.string.len));
	}
	return PointerGetDatum(construct_array(items, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* FieldValue converts a present, non-null field to its argument's Datum. */
static Datum
FieldValue(const FormField *field, JsonbValue *v)
{
	char	   *str;

	switch (field->type)
	{
		case FIELD_TEXT:
			if (v->type != jbvString)
				ReportWrongType(field, NULL);
			return PointerGetDatum(cstring_to_text_with_len(v->val.string.val, v->val.string.len));
		case FIELD_JSONB:
			return JsonbPGetDatum(JsonbValueToJsonb(v));
		case FIELD_BOOLEAN:
			if (v->type != jbvBool)
				ReportWrongType(field, NULL);
			return BoolGetDatum(v->val.boolean);
		case FIELD_TEXT_ARRAY:
			return TextArrayField(field, v);
		case FIELD_UUID:
			if (v->type != jbvString)
				ReportWrongType(field, NULL);
			return ParseWithInput(field, pnstrdup(v->val.string.val, v->val.string.len));
		case FIELD_BIGINT:
		case FIELD_INTEGER:
		case FIELD_INTERVAL:
			if (v->type == jbvString)
				str = pnstrdup(v->val.string.val, v->val.string.len);
			else if (v->type == jbvNumeric)
			{
				str = DatumGetCString(DirectFunctionCall1(numeric_out,
														  NumericGetDatum(v->val.numeric)));
				if (field->type == FIELD_INTERVAL)
					str = psprintf("%s seconds", str);
			}
			else
			{
				ReportWrongType(field, NULL);
				str = NULL;		/* keep compiler quiet */
			}
			return ParseWithInput(field, str);
	}
	elog(ERROR, "unexpected field type %d", (int) field->type);
	return (Datum) 0;
}

/*
 * CallWithRequest checks fcinfo's one jsonb argument against form and calls
 * the typed function with the fields as its arguments, in fcinfo's context
 * and result set. Returns the typed function's result; fcinfo->isnull is
 * set like the typed function set it.
 */
static Datum
CallWithRequest(FunctionCallInfo fcinfo, const RequestForm *form)
{
	LOCAL_FCINFO(typed, MAX_FORM_FIELDS);
	Jsonb	   *request;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	Datum		result;

	Assert(form->nfields <= MAX_FORM_FIELDS);
	RequireArg(fcinfo, 0, "request");
	request = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_OBJECT(request))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"request\" must be a JSON object with fields %s",
						FieldList(form)),
				 errhint("From n8n: SELECT * FROM idemgate.%s($1::jsonb) with one query "
						 "parameter {{ JSON.stringify({...}) }}.",
						 form->function)));

	/* An unknown field is most likely a typo ("aprover"): refuse it. */
	it = JsonbIteratorInit(&request->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		bool		known = false;

		if (tok != WJB_KEY)
			continue;
		for (int i = 0; i < form->nfields && !known; i++)
			known = v.val.string.len == strlen(form->fields[i].name) &&
				memcmp(v.val.string.val, form->fields[i].name, v.val.string.len) == 0;
		if (!known)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown field \"%s\" in argument \"request\" of %s",
							TruncateForMessage(pnstrdup(v.val.string.val, v.val.string.len)),
							form->function),
					 errhint("The fields are %s.", FieldList(form))));
	}

	InitFunctionCallInfoData(*typed, fcinfo->flinfo, form->nfields, fcinfo->fncollation,
							 fcinfo->context, fcinfo->resultinfo);
	for (int i = 0; i < form->nfields; i++)
	{
		const FormField *field = &form->fields[i];
		JsonbValue *fv = getKeyJsonValueFromContainer(&request->root, field->name,
													  strlen(field->name), NULL);

		if (fv != NULL && fv->type == jbvNull)
			fv = NULL;			/* null means "not given" */
		if (fv != NULL)
		{
			typed->args[i].value = FieldValue(field, fv);
			typed->args[i].isnull = false;
		}
		else if (field->required)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("field \"%s\" of argument \"request\" must not be missing or null",
							field->name)));
		else if (field->default_value != NULL)
		{
			typed->args[i].value = ParseWithInput(field, field->default_value);
			typed->args[i].isnull = false;
		}
		else
		{
			typed->args[i].value = (Datum) 0;
			typed->args[i].isnull = true;
		}
	}

	result = form->typed(typed);
	fcinfo->isnull = typed->isnull;
	return result;
}

/*
 * peek_approval(request jsonb): one row always; an unknown token gives
 * status "invalid" and NULLs.
 */
PG_FUNCTION_INFO_V1(idemgate_peek_approval_request);
Datum
idemgate_peek_approval_request(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	(void) CallWithRequest(fcinfo, &peek_approval_form);
	if (rsinfo != NULL && rsinfo->setResult != NULL &&
		tuplestore_tuple_count(rsinfo->setResult) == 0)
	{
		Datum		row[7] = {0, 0, 0, 0, 0, 0, 0};
		bool		nulls[7] = {true, true, false, true, true, true, true};

		row[2] = CStringGetTextDatum("invalid");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	return (Datum) 0;
}
