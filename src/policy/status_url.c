/*-------------------------------------------------------------------------
 *
 * src/policy/status_url.c
 *	  Status URLs (SPEC §22, docs/dispatcher.md "Reconciliation"): an
 *	  endpoint may name where its provider answers "did you get this
 *	  one?", a template with {effect_id} (the Idempotency-Key we sent) and
 *	  optionally {provider_id}. The dispatcher reads it with GET for each
 *	  unknown effect; this file checks the template's placeholders and
 *	  fills them in (src/policy/endpoints.c applies the destination rules).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "core/idemgate_limits.h"
#include "policy/status_url.h"

/* The placeholders a template may hold. */
typedef enum Placeholder
{
	NO_PLACEHOLDER,
	EFFECT_ID_PLACEHOLDER,
	PROVIDER_ID_PLACEHOLDER
} Placeholder;

/* PlaceholderAt tells which placeholder starts at p; *len is its length. */
static Placeholder
PlaceholderAt(const char *p, size_t *len)
{
	if (strncmp(p, STATUS_URL_EFFECT_ID, strlen(STATUS_URL_EFFECT_ID)) == 0)
	{
		*len = strlen(STATUS_URL_EFFECT_ID);
		return EFFECT_ID_PLACEHOLDER;
	}
	if (strncmp(p, STATUS_URL_PROVIDER_ID, strlen(STATUS_URL_PROVIDER_ID)) == 0)
	{
		*len = strlen(STATUS_URL_PROVIDER_ID);
		return PROVIDER_ID_PLACEHOLDER;
	}
	*len = 0;
	return NO_PLACEHOLDER;
}

/* AppendPercentEncoded appends s with every byte but RFC 3986's unreserved ones encoded. */
static void
AppendPercentEncoded(StringInfo buf, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *c = (const unsigned char *) s; *c; c++)
	{
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
			(*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_' || *c == '~')
			appendStringInfoChar(buf, (char) *c);
		else
		{
			appendStringInfoChar(buf, '%');
			appendStringInfoChar(buf, hex[*c >> 4]);
			appendStringInfoChar(buf, hex[*c & 15]);
		}
	}
}

/* StatusUrlFor fills in a template; see status_url.h. */
char *
StatusUrlFor(const char *template, const char *effect_id, const char *provider_id)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (const char *p = template; *p;)
	{
		size_t		len;
		Placeholder ph = (*p == '{') ? PlaceholderAt(p, &len) : NO_PLACEHOLDER;

		if (ph == NO_PLACEHOLDER)
		{
			appendStringInfoChar(&buf, *p++);
			continue;
		}
		if (ph == EFFECT_ID_PLACEHOLDER)
			appendStringInfoString(&buf, effect_id);
		else if (provider_id == NULL)
		{
			pfree(buf.data);
			return NULL;
		}
		else
			AppendPercentEncoded(&buf, provider_id);
		p += len;
	}
	return buf.data;
}

/* StatusUrlProblem; see status_url.h. */
const char *
StatusUrlProblem(const char *template)
{
	bool		has_effect_id = false;

	for (const char *p = template; *p; p++)
	{
		size_t		len;
		Placeholder ph;

		if (*p != '{' && *p != '}')
			continue;
		ph = (*p == '{') ? PlaceholderAt(p, &len) : NO_PLACEHOLDER;
		if (ph == NO_PLACEHOLDER)
			return "it has a brace that is not one of the placeholders " STATUS_URL_EFFECT_ID
				" and " STATUS_URL_PROVIDER_ID " (write a literal brace as %7B or %7D)";
		if (ph == EFFECT_ID_PLACEHOLDER)
			has_effect_id = true;
		p += len - 1;
	}
	if (!has_effect_id)
		return "it does not name " STATUS_URL_EFFECT_ID
			" (the look-up asks about one effect, by the Idempotency-Key it was sent with)";
	return NULL;
}
