/*-------------------------------------------------------------------------
 *
 * src/delivery/answer_body.c
 *	  Reading what a provider answered. Never raises: a hostile or broken
 *	  body must not lose the outcome of a delivered effect.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"

#include "delivery/http.h"
#include "core/json_walk.h"
#include "delivery/answer_body.h"
#include "core/idemgate_limits.h"

typedef struct ProviderIdParse
{
	JsonLexContext *lex;
	const char *field;
	bool		in_field;
	char	   *value;
} ProviderIdParse;

/* ProviderIdField notes when a top-level field has the wanted name. */
static JSON_ACTION_RESULT
ProviderIdField(void *state, char *fname, bool isnull)
{
	ProviderIdParse *p = (ProviderIdParse *) state;

	p->in_field = (p->lex->lex_level == 1 && p->value == NULL &&
				   fname != NULL && strcmp(fname, p->field) == 0);
	JSON_ACTION_DONE;
}

/* ProviderIdScalar keeps the wanted field's value when it is a string or number. */
static JSON_ACTION_RESULT
ProviderIdScalar(void *state, char *token, JsonTokenType tokentype)
{
	ProviderIdParse *p = (ProviderIdParse *) state;

	if (p->in_field && p->lex->lex_level == 1 &&
		(tokentype == JSON_TOKEN_STRING || tokentype == JSON_TOKEN_NUMBER))
		p->value = token;
	p->in_field = false;
	JSON_ACTION_DONE;
}

/* ProviderIdArray forgets the field when its value is not a scalar. */
static JSON_ACTION_RESULT
ProviderIdNonScalar(void *state)
{
	((ProviderIdParse *) state)->in_field = false;
	JSON_ACTION_DONE;
}

/*
 * JsonTooDeep tells whether a body nests arrays or objects more than
 * IDEMGATE_MAX_RESPONSE_JSON_DEPTH levels: pg_parse_json recurses per level and
 * raises "stack depth limit exceeded" on a hostile body, which would lose
 * the outcome of a delivered effect.
 */
static bool
JsonTooDeep(const char *body, size_t len)
{
	int			depth = 0;
	bool		in_string = false;

	for (size_t i = 0; i < len; i++)
	{
		char		c = body[i];

		if (in_string)
		{
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		}
		else if (c == '"')
			in_string = true;
		else if (c == '[' || c == '{')
		{
			if (++depth > IDEMGATE_MAX_RESPONSE_JSON_DEPTH)
				return true;
		}
		else if (c == ']' || c == '}')
			depth--;
	}
	return false;
}

/*
 * ProviderIdFrom extracts the top-level field of a JSON response body as
 * text, or NULL when the body is not JSON, lacks the field, or the value is
 * not a string or number. Never raises.
 */
char *
ProviderIdFrom(const char *body, size_t len, const char *field)
{
	ProviderIdParse p;

	if (body == NULL || len == 0 || field == NULL || len >= HTTP_MAX_BODY_KEPT)
		return NULL;
	if (!pg_verifymbstr(body, (int) len, true) || JsonTooDeep(body, len))
		return NULL;
	memset(&p, 0, sizeof(p));
	p.field = field;
	if (!WalkJson(unconstify(char *, body), len, &p, &p.lex, ProviderIdField, ProviderIdScalar,
				  ProviderIdNonScalar, ProviderIdNonScalar))
		return NULL;
	if (p.value != NULL &&
		(strlen(p.value) == 0 || strlen(p.value) > IDEMGATE_MAX_RESPONSE_PROVIDER_ID_BYTES))
		return NULL;
	return p.value;
}

/*
 * ErrorBodyExcerpt returns the first IDEMGATE_ERROR_BODY_KEPT_BYTES bytes of a failed
 * response's body for last_error, cut at a character boundary (never half
 * a multibyte character), or NULL when the body is empty. Bytes that are
 * not valid in the database encoding end the excerpt there (a NUL byte
 * too), so the text can always be stored. Never raises.
 */
char *
ErrorBodyExcerpt(const char *body, size_t len)
{
	int			n;
	char	   *out;

	if (body == NULL || len == 0)
		return NULL;
	n = (int) Min(len, (size_t) IDEMGATE_ERROR_BODY_KEPT_BYTES + MAX_MULTIBYTE_CHAR_LEN);
	/* The longest valid prefix (stops at a NUL or an invalid sequence). */
	n = pg_encoding_verifymbstr(GetDatabaseEncoding(), body, n);
	/* At most IDEMGATE_ERROR_BODY_KEPT_BYTES bytes, ending on a character boundary. */
	if (n > IDEMGATE_ERROR_BODY_KEPT_BYTES)
		n = pg_encoding_mbcliplen(GetDatabaseEncoding(), body, n, IDEMGATE_ERROR_BODY_KEPT_BYTES);
	if (n <= 0)
		return NULL;
	out = palloc(n + 1);
	memcpy(out, body, n);
	out[n] = '\0';
	return out;
}
