/*-------------------------------------------------------------------------
 *
 * src/outbox/effects.c
 *	  Effects: the effects argument of enqueue_effect and request_approval
 *	  (parsed and checked here), and inserting them for consume_approval.
 *	  The rows are the outbox's (src/outbox/outbox.c); enqueue_effect, the
 *	  automatic path, is src/operations/enqueue.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "outbox/effects.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "outbox/outbox.h"

#define MAX_TYPE_BYTES IDEMGATE_MAX_NAME_BYTES
#define MAX_TARGET_BYTES IDEMGATE_MAX_TARGET_BYTES

/* EffectName names effect i for messages: effects[i], or effects for one object. */
static char *
EffectName(const char *argname, int i, bool single)
{
	return single ? pstrdup(argname) : psprintf("%s[%d]", argname, i);
}

/* ReportBadEffects raises 22023 about the shape of the whole argument. */
static void
ReportBadEffects(const char *argname)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"%s\" must be an effect object or a non-empty array of "
					"effect objects",
					argname),
			 errhint("Each effect is {\"type\": text, \"target\": text, \"payload\": any JSON}.")));
}

/*
 * EffectNotBefore reads the optional not_before field of an effect: a
 * finite timestamptz string (an ISO 8601 time with its offset, e.g.
 * "2026-12-01T09:00:00+01:00"), or 22023 naming the field.
 */
static bool
EffectNotBefore(JsonbContainer *obj, const char *name, TimestampTz *out)
{
	JsonbValue *v = getKeyJsonValueFromContainer(obj, "not_before", 10, NULL);
	char	   *str;
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	if (v == NULL || v->type == jbvNull)
		return false;
	if (v->type != jbvString || v->val.string.len == 0 || v->val.string.len > 100)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.not_before must be a timestamp string", name),
				 errhint("Give an ISO 8601 time with its offset, e.g. "
						 "\"2026-12-01T09:00:00+01:00\".")));
	str = pnstrdup(v->val.string.val, v->val.string.len);
	PG_TRY();
	{
		*out = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in, CStringGetDatum(str),
													   ObjectIdGetDatum(InvalidOid),
													   Int32GetDatum(-1)));
	}
	PG_CATCH();
	{
		/* Re-raised below with our SQLSTATE; nothing was acquired meanwhile. */
		MemoryContextSwitchTo(oldcxt);
		FlushErrorState();
		ok = false;
	}
	PG_END_TRY();
	if (!ok || TIMESTAMP_NOT_FINITE(*out))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.not_before must be a finite timestamp, not \"%s\"", name,
						TruncateForMessage(str)),
				 errhint("Give an ISO 8601 time with its offset, e.g. "
						 "\"2026-12-01T09:00:00+01:00\".")));
	return true;
}

/* EffectString returns the non-empty string field of an effect, or raises. */
static char *
EffectString(JsonbContainer *obj, const char *field, const char *name,
			 int max_bytes, int *len)
{
	JsonbValue *v = getKeyJsonValueFromContainer(obj, field, strlen(field), NULL);

	if (v == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.%s is missing", name, field),
				 errhint("Each effect is {\"type\": text, \"target\": text, "
						 "\"payload\": any JSON}.")));
	if (v->type != jbvString || v->val.string.len == 0 || v->val.string.len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.%s must be a JSON string of 1 to %d bytes", name, field, max_bytes)));
	*len = v->val.string.len;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* ParseEffect reads one effect object, refusing unknown or missing fields. */
static void
ParseEffect(JsonbContainer *obj, const char *name, ParsedEffect *out)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonbValue *payload;

	it = JsonbIteratorInit(obj);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		if (!((v.val.string.len == 4 && memcmp(v.val.string.val, "type", 4) == 0) ||
			  (v.val.string.len == 6 && memcmp(v.val.string.val, "target", 6) == 0) ||
			  (v.val.string.len == 7 && memcmp(v.val.string.val, "payload", 7) == 0) ||
			  (v.val.string.len == 10 && memcmp(v.val.string.val, "not_before", 10) == 0)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s has unknown field \"%s\"", name,
							TruncateForMessage(pnstrdup(v.val.string.val, v.val.string.len))),
					 errhint("The fields of an effect are type, target, "
							 "payload and not_before (optional).")));
	}

	out->type = EffectString(obj, "type", name, MAX_TYPE_BYTES, &out->type_len);
	if (IsReservedEffectType(out->type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.type \"%s\" is reserved", name, TruncateForMessage(out->type)),
				 errdetail("Effect types beginning with \"" IDEMGATE_RESERVED_TYPE_PREFIX "\" are "
						   "idemgate's own (re-runs, see idemgate.register_rerun)."),
				 errhint("Name the type without that prefix.")));
	out->target = EffectString(obj, "target", name, MAX_TARGET_BYTES, &out->target_len);
	payload = getKeyJsonValueFromContainer(obj, "payload", 7, NULL);
	if (payload == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s.payload is missing", name),
				 errhint("Give the body the endpoint needs; use {} when there is none.")));
	out->payload = JsonbValueToJsonb(payload);
	out->has_not_before = EffectNotBefore(obj, name, &out->not_before);
}

/* ParseEffects splits the effects argument into its effects; see effects.h. */
int
ParseEffects(Jsonb *effects, const char *argname, ParsedEffect **out)
{
	ParsedEffect *parsed;
	int			n = 0;

	if (JB_ROOT_IS_SCALAR(effects))
		ReportBadEffects(argname);
	if (JB_ROOT_IS_OBJECT(effects))
	{
		parsed = palloc0(sizeof(ParsedEffect));
		ParseEffect(&effects->root, argname, &parsed[0]);
		n = 1;
	}
	else
	{
		int			count = JB_ROOT_COUNT(effects);
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		if (count == 0)
			ReportBadEffects(argname);
		if (count > IDEMGATE_MAX_EFFECTS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" holds %d effects; at most %d are allowed in one call",
							argname, count, IDEMGATE_MAX_EFFECTS)));
		parsed = palloc0(sizeof(ParsedEffect) * count);
		it = JsonbIteratorInit(&effects->root);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *name;

			if (tok != WJB_ELEM)
				continue;
			name = EffectName(argname, n, false);
			if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s must be a JSON object", name),
						 errhint("Each effect is {\"type\": text, \"target\": text, "
								 "\"payload\": any JSON}.")));
			ParseEffect(v.val.binary.data, name, &parsed[n]);
			n++;
		}
	}

	/* The same (type, target) twice in one call would silently drop one. */
	for (int i = 1; i < n; i++)
		for (int j = 0; j < i; j++)
			if (parsed[i].type_len == parsed[j].type_len &&
				parsed[i].target_len == parsed[j].target_len &&
				memcmp(parsed[i].type, parsed[j].type, parsed[i].type_len) == 0 &&
				memcmp(parsed[i].target, parsed[j].target, parsed[i].target_len) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s repeats the type and target of %s",
								EffectName(argname, i, false), EffectName(argname, j, false)),
						 errhint("An effect is identified by (idempotency key, type, target); "
								 "merge the two.")));
	*out = parsed;
	return n;
}

/* InsertEffects inserts the effects of run key; see effects.h. */
ArrayType *
InsertEffects(text *key, Jsonb *effects, bool automatic, const char *actor,
			  EventDetails *details)
{
	ParsedEffect *parsed;
	int			n = ParseEffects(effects, "effects", &parsed);

	return InsertOutboxEffects(key, parsed, n, automatic, actor, details);
}
