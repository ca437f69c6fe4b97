/*-------------------------------------------------------------------------
 *
 * src/policy/endpoints.c
 *	  The endpoints table's one writer: register_endpoint (with its limits
 *	  and status URL) and unregister_endpoint; and the URL checks that
 *	  keep effects away from places they should not go (SSRF): an effect is only ever sent to the
 *	  URL registered for its type by an operator, never to a URL taken from
 *	  a payload; the URL is parsed with libcurl's own URL parser (the one
 *	  that will send the request, so the two cannot disagree); plain http
 *	  is allowed only to hosts the administrator listed; a host written as
 *	  a private, loopback or otherwise non-public address is refused for
 *	  every scheme unless listed (src/policy/destinations.c; names are checked
 *	  on the resolved address at connect time, src/delivery/http.c).
 *
 *	  Header values may hold secrets (API keys), so they are never written
 *	  to the audit trail, and only operators can read idemgate.endpoints.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "core/crypto.h"
#include "policy/destinations.h"
#include "core/dispatcher_wake.h"
#include "policy/endpoint_circuits.h"
#include "policy/endpoints.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "policy/effect_types.h"
#include "policy/rate_limit.h"
#include "policy/secrets.h"
#include "citus/statements.h"
#include "policy/status_url.h"
#include "core/idemgate_limits.h"

PG_FUNCTION_INFO_V1(idemgate_register_endpoint);
PG_FUNCTION_INFO_V1(idemgate_unregister_endpoint);


/* Headers the dispatcher sets itself; an endpoint may not override them. */
static const char *const reserved_headers[] = {
	"Content-Type", "Idempotency-Key", "Host", "Content-Length", "Transfer-Encoding", "Expect", NULL
};

/* IsDispatcherHeader tells whether name (any case) is one of reserved_headers. */
bool
IsDispatcherHeader(const char *name)
{
	for (int i = 0; reserved_headers[i] != NULL; i++)
		if (pg_strcasecmp(name, reserved_headers[i]) == 0)
			return true;
	return false;
}

static SavedStatement upsert_stmt = {
	"INSERT INTO idemgate.endpoints AS e (effect_type, url, timeout, max_attempts,"
	"  honors_idempotency_key, headers, provider_id_field)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7)"
	" ON CONFLICT (effect_type) DO UPDATE"
	" SET url = excluded.url, timeout = excluded.timeout, max_attempts = excluded.max_attempts,"
	"     honors_idempotency_key = excluded.honors_idempotency_key, headers = excluded.headers,"
	"     provider_id_field = excluded.provider_id_field, updated_at = excluded.updated_at"
	" RETURNING (xmax OPERATOR(pg_catalog.=) 0) AS created",
	7, {TEXTOID, TEXTOID, INTERVALOID, INT4OID, BOOLOID, JSONBOID, TEXTOID}
};

/* 1.3: where the provider answers status look-ups (src/policy/status_url.c). */
static SavedStatement set_status_url_stmt = {
	"UPDATE idemgate.endpoints SET status_url = $2"
	" WHERE effect_type OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, TEXTOID}
};

static SavedStatement store_limits_stmt = {
	"UPDATE idemgate.endpoints SET rate_limit = $2, max_in_flight = $3"
	" WHERE effect_type OPERATOR(pg_catalog.=) $1",
	3, {TEXTOID, FLOAT8OID, INT4OID}
};

static SavedStatement unregister_stmt = {
	"DELETE FROM idemgate.endpoints WHERE effect_type OPERATOR(pg_catalog.=) $1"
	" RETURNING effect_type",
	1, {TEXTOID}
};

/* StripBrackets returns host without the [] of an IPv6 literal. */
static char *
StripBrackets(const char *host)
{
	size_t		len = strlen(host);

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']')
		return pnstrdup(host + 1, len - 2);
	return pstrdup(host);
}

/*
 * HttpHostAllowed tells whether host is listed in idemgate.allowed_http_hosts
 * (comma-separated, case-insensitive, IPv6 with or without brackets).
 */
static bool
HttpHostAllowed(const char *host)
{
	char	   *wanted = StripBrackets(host);
	const char *p = IdemgateAllowedHttpHosts ? IdemgateAllowedHttpHosts : "";

	while (*p)
	{
		const char *end = strchr(p, ',');
		size_t		len = end ? (size_t) (end - p) : strlen(p);
		char	   *item = pnstrdup(p, len);
		char	   *s = item;
		char	   *e;

		while (*s == ' ' || *s == '\t' || *s == '"')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '"'))
			*--e = '\0';
		if (*s && pg_strcasecmp(StripBrackets(s), wanted) == 0)
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/*
 * UrlPortProblem says why url's port is refused, or NULL: an empty port
 * ("http://host:/x") or port 0, which libcurl reads as "the scheme's
 * default" and so connects to a port nobody wrote.
 */
static char *
UrlPortProblem(const char *url)
{
	const char *p = strstr(url, "://");
	const char *end;
	const char *at;
	const char *colon;

	if (p == NULL)
		return NULL;
	p += 3;
	end = p + strcspn(p, "/?#");
	/* After any user information; an IPv6 literal's colons are bracketed. */
	for (at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	if (p < end && *p == '[')
	{
		const char *close = memchr(p, ']', end - p);

		if (close == NULL)
			return NULL;
		p = close + 1;
	}
	colon = memchr(p, ':', end - p);
	if (colon == NULL)
		return NULL;
	if (colon + 1 == end)
		return pstrdup("its port is empty; write the port, or leave out the colon");
	for (const char *d = colon + 1; d < end; d++)
		if (*d != '0')
			return NULL;
	return pstrdup("its port is 0");
}

/* EndpointUrlAllowed checks url; see endpoints.h. */
bool
EndpointUrlAllowed(const char *url, char **why)
{
	CURLU	   *h;
	CURLUcode	rc;
	char	   *part = NULL;
	char	   *scheme = NULL;
	char	   *host = NULL;
	char	   *reason = NULL;

	if (url == NULL || *url == '\0')
	{
		*why = pstrdup("it is empty");
		return false;
	}
	h = curl_url();
	if (h == NULL)
	{
		*why = pstrdup("out of memory parsing it");
		return false;
	}
	rc = curl_url_set(h, CURLUPART_URL, url, 0);
	if (rc != CURLUE_OK)
		reason = psprintf("it cannot be parsed as an absolute http or https URL (%s)",
						  curl_url_strerror(rc));
	if (reason == NULL)
	{
		if (curl_url_get(h, CURLUPART_SCHEME, &part, 0) == CURLUE_OK && part != NULL)
			scheme = pstrdup(part);
		curl_free(part);
		part = NULL;
		if (curl_url_get(h, CURLUPART_HOST, &part, 0) == CURLUE_OK && part != NULL)
			host = pstrdup(part);
		curl_free(part);
		part = NULL;

		if (scheme == NULL || host == NULL || *host == '\0')
			reason = pstrdup("it has no scheme or no host");
		else if (pg_strcasecmp(scheme, "https") != 0 && pg_strcasecmp(scheme, "http") != 0)
			reason = psprintf("its scheme is %s; only https (or http to allowed hosts) is allowed",
							  TruncateForMessage(scheme));
	}
	if (reason == NULL)
	{
		bool		has_user = false;

		if (curl_url_get(h, CURLUPART_USER, &part, 0) == CURLUE_OK && part != NULL)
			has_user = true;
		curl_free(part);
		part = NULL;
		if (curl_url_get(h, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK && part != NULL)
			has_user = true;
		curl_free(part);
		part = NULL;
		if (has_user)
			reason = pstrdup("it contains user information; put credentials in the endpoint's "
							 "headers instead");
	}
	curl_url_cleanup(h);
	if (reason == NULL)
		reason = UrlPortProblem(url);

	if (reason == NULL && pg_strcasecmp(scheme, "http") == 0 && !HttpHostAllowed(host))
		reason = psprintf("plain http is only allowed to hosts listed in "
						  "idemgate.allowed_http_hosts, not to %s",
						  TruncateForMessage(host));
	if (reason == NULL && !HttpHostAllowed(host))
	{
		char		refused[160];

		if (NumericHostRefused(host, refused, sizeof(refused)))
			reason = psprintf("%s; only hosts listed in idemgate.allowed_http_hosts may "
							  "be non-public",
							  refused);
	}
	if (reason != NULL)
	{
		*why = reason;
		return false;
	}
	*why = NULL;
	return true;
}

/* EndpointHostListed tells whether url's host is in idemgate.allowed_http_hosts. */
bool
EndpointHostListed(const char *url)
{
	CURLU	   *h = curl_url();
	char	   *part = NULL;
	bool		listed = false;

	if (h == NULL)
		return false;
	if (curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
		curl_url_get(h, CURLUPART_HOST, &part, 0) == CURLUE_OK && part != NULL)
		listed = HttpHostAllowed(part);
	curl_free(part);
	curl_url_cleanup(h);
	return listed;
}

/* IsTokenChar tells whether c may appear in an HTTP header name (RFC 9110 tchar). */
static bool
IsTokenChar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* HeaderError raises 22023 about the headers argument. */
static void
HeaderError(const char *msg, const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"headers\" %s", msg),
			 name ? errdetail("Header name: \"%s\".", TruncateForMessage(name)) : 0,
			 errhint("Pass a JSON object of header name → string value, e.g. {\"Authorization\": "
					 "\"Bearer ...\"}.")));
}

/*
 * CheckEndpointHeaders validates the headers object: string values, token names,
 * no CR/LF or other control characters, no reserved or duplicate names.
 * Returns the names as a JSON array for the audit event.
 */
Jsonb *
CheckEndpointHeaders(Jsonb *headers)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	StringInfoData names;
	List	   *seen = NIL;
	int			count = 0;
	char	   *name = NULL;

	if (!JB_ROOT_IS_OBJECT(headers) || JB_ROOT_IS_SCALAR(headers))
		HeaderError("must be a JSON object", NULL);
	initStringInfo(&names);
	appendStringInfoChar(&names, '[');
	it = JsonbIteratorInit(&headers->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			ListCell   *lc;

			name = pnstrdup(v.val.string.val, v.val.string.len);
			if (++count > IDEMGATE_MAX_HEADERS)
				HeaderError(psprintf("must have at most %d headers", IDEMGATE_MAX_HEADERS), NULL);
			if (v.val.string.len == 0 || v.val.string.len > IDEMGATE_MAX_HEADER_NAME_BYTES)
				HeaderError(psprintf("names must be 1 to %d characters long",
									 IDEMGATE_MAX_HEADER_NAME_BYTES), name);
			for (int i = 0; i < v.val.string.len; i++)
				if (!IsTokenChar((unsigned char) name[i]))
					HeaderError("names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)",
								name);
			if (IsDispatcherHeader(name))
				HeaderError("may not set Content-Type, Idempotency-Key, Host, Content-Length, "
							"Transfer-Encoding or Expect; the dispatcher sets them",
							name);
			foreach(lc, seen)
				if (pg_strcasecmp((char *) lfirst(lc), name) == 0)
					HeaderError("names must be unique regardless of case", name);
			seen = lappend(seen, name);
			if (count > 1)
				appendStringInfoString(&names, ", ");
			escape_json(&names, name);
		}
		else if (tok == WJB_VALUE)
		{
			if (v.type != jbvString)
				HeaderError("values must be JSON strings", name);
			if (v.val.string.len > IDEMGATE_MAX_HEADER_VALUE_BYTES)
				HeaderError(psprintf("values must be at most %d bytes long",
									 IDEMGATE_MAX_HEADER_VALUE_BYTES), name);
			for (int i = 0; i < v.val.string.len; i++)
			{
				unsigned char c = (unsigned char) v.val.string.val[i];

				if ((c < 0x20 && c != '\t') || c == 0x7f)
					HeaderError("values must not contain CR, LF or other control characters", name);
			}
		}
	}
	appendStringInfoChar(&names, ']');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(names.data)));
}

/* RequireEndpointUrl; see endpoints.h. */
void
RequireEndpointUrl(const char *url)
{
	char	   *why;

	if (!EndpointUrlAllowed(url, &why))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"url\" is not allowed: %s", why),
				 errhint("Use an https:// URL to a public host, or add the host to "
						 "idemgate.allowed_http_hosts for plain http or a non-public address.")));
}

/* HeadersArg; see endpoints.h. */
Jsonb *
HeadersArg(FunctionCallInfo fcinfo, int argno, Jsonb **names)
{
	Jsonb	   *headers;

	RequireArg(fcinfo, argno, "headers");
	headers = PG_GETARG_JSONB_P(argno);
	*names = CheckEndpointHeaders(headers);
	CheckSecretReferences(headers);	/* ${secret:NAME} the file has (src/policy/secrets.c) */
	return headers;
}

/* UpsertEndpoint creates or replaces an endpoint row; see endpoints.h. */
bool
UpsertEndpoint(text *effect_type, text *url, Interval *timeout, int32 max_attempts,
			   bool honors, Jsonb *headers, text *provider_id_field)
{
	Datum		values[7];
	bool		isnull;

	values[0] = PointerGetDatum(effect_type);
	values[1] = PointerGetDatum(url);
	values[2] = IntervalPGetDatum(timeout);
	values[3] = Int32GetDatum(max_attempts);
	values[4] = BoolGetDatum(honors);
	values[5] = JsonbPGetDatum(headers);
	values[6] = PointerGetDatum(provider_id_field);
	return DatumGetBool(ExecSavedValue(&upsert_stmt, values, NULL, false, SPI_OK_INSERT_RETURNING,
									   "could not register endpoint", &isnull));
}

/*
 * AuditEndpointUrl adds what the audit trail keeps of an endpoint's URL to
 * details: only the scheme and a fingerprint of the host. Paths and
 * queries can hold secrets, and readers see the events, so an internal
 * host name is not written there (docs/operations.md, "The audit trail").
 * The fingerprint tells whether two registrations point at the same host;
 * idemgate.endpoints (operators) holds the URL itself.
 */
void
AuditEndpointUrl(EventDetails *details, const char *url)
{
	CURLU	   *h = curl_url();
	char	   *scheme = NULL;
	char	   *host = NULL;

	if (h != NULL)
	{
		char	   *part = NULL;

		if (curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK)
		{
			if (curl_url_get(h, CURLUPART_SCHEME, &part, 0) == CURLUE_OK && part)
				scheme = pstrdup(part);
			curl_free(part);
			part = NULL;
			if (curl_url_get(h, CURLUPART_HOST, &part, 0) == CURLUE_OK && part)
				host = pstrdup(part);
			curl_free(part);
		}
		curl_url_cleanup(h);
	}
	DetailsText(details, "scheme", scheme);
	if (host != NULL)
	{
		uint8		digest[IDEMGATE_SHA256_LEN];
		char		hex[IDEMGATE_SHA256_LEN * 2 + 1];

		Sha256(host, strlen(host), digest);
		hex[hex_encode((const char *) digest, IDEMGATE_HOST_FINGERPRINT_BYTES, hex)] = '\0';
		DetailsText(details, "host_sha256", hex);
	}
}

/*
 * StatusUrlArg reads and checks status_url (argno, 1.3): NULL, or a
 * template whose placeholders status_url.c fills and whose URLs pass the
 * endpoints' destination rules. 22023 otherwise.
 */
static text *
StatusUrlArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *arg;
	char	   *template;
	const char *problem;
	char	   *why;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	arg = TextArg(fcinfo, argno, "status_url", IDEMGATE_MAX_URL_BYTES);
	template = text_to_cstring(arg);
	problem = StatusUrlProblem(template);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"status_url\" is not allowed: %s", problem),
				 errhint("For example "
						 "https://api.example.com/v1/messages?idempotency_key="
						 STATUS_URL_EFFECT_ID)));
	/* The URLs it makes must pass the endpoints' rules: try one. */
	if (!EndpointUrlAllowed(StatusUrlFor(template, "00000000-0000-0000-0000-000000000000",
										 "p"), &why))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"status_url\" is not allowed: %s", why),
				 errhint("The same rules as the endpoint's url: https to a public host, "
						 "or a host listed in idemgate.allowed_http_hosts.")));
	return arg;
}

/*
 * idemgate_register_endpoint implements register_endpoint(effect_type,
 * url, timeout, max_attempts, honors_idempotency_key, headers,
 * provider_id_field, rate_limit, max_in_flight, status_url): creates or
 * replaces the endpoint of an effect type.
 */
Datum
idemgate_register_endpoint(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", IDEMGATE_MAX_NAME_BYTES);
	text	   *url = TextArg(fcinfo, 1, "url", IDEMGATE_MAX_URL_BYTES);
	char	   *url_str = text_to_cstring(url);
	Interval   *timeout;
	int32		max_attempts;
	bool		honors;
	Jsonb	   *headers;
	Jsonb	   *header_names;
	text	   *provider_id_field;
	bool		created;
	EventDetails details;
	Datum		rate_limit;
	bool		rate_null;
	Datum		max_in_flight;
	bool		max_null;
	text	   *status_url;

	if (IsReservedEffectType(text_to_cstring(effect_type)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("effect type \"%s\" is reserved",
						TruncateForMessage(text_to_cstring(effect_type))),
				 errdetail("Effect types beginning with \"" IDEMGATE_RESERVED_TYPE_PREFIX "\" are "
						   "idemgate's own."),
				 errhint("Register a workflow's re-run endpoint with "
						 "idemgate.register_rerun(workflow, url).")));
	RequireEndpointUrl(url_str);
	timeout = IntervalArg(fcinfo, 2, "timeout", 0, IDEMGATE_MAX_REQUEST_TIMEOUT_USECS, NULL);
	max_attempts = REQUIRED_ARG(3, "max_attempts", INT32);
	if (max_attempts < 1 || max_attempts > 100)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_attempts\" must be between 1 and 100, not %d",
						max_attempts)));
	honors = REQUIRED_ARG(4, "honors_idempotency_key", BOOL);
	headers = HeadersArg(fcinfo, 5, &header_names);
	provider_id_field = TextArg(fcinfo, 6, "provider_id_field", IDEMGATE_MAX_NAME_BYTES);
	/* 1.1: rate_limit, max_in_flight (src/policy/rate_limit.c). */
	EndpointLimitsArgs(fcinfo, 7, &rate_limit, &rate_null, &max_in_flight, &max_null);
	status_url = StatusUrlArg(fcinfo, 9);

	ConnectSPI();
	created = UpsertEndpoint(effect_type, url, timeout, max_attempts, honors, headers,
							 provider_id_field);
	if (PG_NARGS() > 7)			/* the 1.1 signature; 1.0 has no such columns */
		StoreEndpointLimits(effect_type, rate_limit, rate_null, max_in_flight, max_null);
	if (PG_NARGS() > 9)			/* 1.3 */
	{
		Datum		values[2];
		char		nulls[2] = {' ', status_url ? ' ' : 'n'};

		values[0] = PointerGetDatum(effect_type);
		values[1] = PointerGetDatum(status_url);
		ExecSavedExpect(&set_status_url_stmt, values, nulls, false, 0, SPI_OK_UPDATE,
						"could not store the status URL");
	}

	DetailsInit(&details);
	DetailsText(&details, "effect_type", text_to_cstring(effect_type));
	DetailsBool(&details, "created", created);
	AuditEndpointUrl(&details, url_str);
	DetailsInt(&details, "timeout_ms", IntervalToUsecs(timeout) / 1000);
	DetailsInt(&details, "max_attempts", max_attempts);
	DetailsBool(&details, "honors_idempotency_key", honors);
	DetailsJsonb(&details, "header_names", header_names);
	DetailsText(&details, "rate_limit",
				rate_null ? NULL : psprintf("%g", DatumGetFloat8(rate_limit)));
	if (!max_null)
		DetailsInt(&details, "max_in_flight", DatumGetInt32(max_in_flight));
	if (status_url != NULL)		/* like url: scheme and host fingerprint only */
	{
		EventDetails su;

		DetailsInit(&su);
		AuditEndpointUrl(&su, StatusUrlFor(text_to_cstring(status_url),
										   "00000000-0000-0000-0000-000000000000", "p"));
		DetailsJsonb(&details, "status_url", DetailsFinish(&su));
	}
	RecordEvent(NULL, NULL, "endpoint_registered", GetUserNameFromId(GetOuterUserId(), false),
				DetailsFinish(&details));
	WakeDispatcherAtCommit();	/* pending effects of this type may go now */
	SPI_finish();
	PG_RETURN_VOID();
}

/* StoreEndpointLimits writes the limits of a registered endpoint; see endpoints.h. */
void
StoreEndpointLimits(text *effect_type, Datum rate, bool rate_null,
					Datum max_in_flight, bool max_null)
{
	Datum		values[3];
	char		nulls[3] = {' ', rate_null ? 'n' : ' ', max_null ? 'n' : ' '};

	values[0] = PointerGetDatum(effect_type);
	values[1] = rate;
	values[2] = max_in_flight;
	ExecSavedOneRow(&store_limits_stmt, values, nulls, false, 0, SPI_OK_UPDATE,
					"could not store the endpoint limits");
}

/*
 * idemgate_unregister_endpoint implements unregister_endpoint(effect_type,
 * actor): removes the type's endpoint; true when there was one. Effects
 * already being sent are recorded as usual; pending ones wait for a puller
 * or a new endpoint (the stuck_effects alert says so when they wait long).
 */
Datum
idemgate_unregister_endpoint(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", IDEMGATE_MAX_NAME_BYTES);
	text	   *actor = TextArg(fcinfo, 1, "actor", IDEMGATE_MAX_NAME_BYTES);
	bool		found;

	ConnectSPI();
	found = ExecSavedByKey(&unregister_stmt, PointerGetDatum(effect_type),
						   SPI_OK_DELETE_RETURNING, "could not unregister endpoint");
	if (found)
	{
		RecordTypeEvent("endpoint_unregistered", text_to_cstring(actor),
						text_to_cstring(effect_type), "role", NULL);
		CircuitForget(text_to_cstring(effect_type));	/* a new endpoint starts closed */
	}
	SPI_finish();
	PG_RETURN_BOOL(found);
}
