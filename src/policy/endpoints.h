/*-------------------------------------------------------------------------
 *
 * src/policy/endpoints.h
 *	  Where effects are delivered, and which URLs are allowed at all.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_ENDPOINTS_H
#define IDEMGATE_ENDPOINTS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/jsonb.h"

#include "ledger/events.h"

/*
 * EndpointUrlAllowed tells whether url may receive effects under the current
 * settings: https always; http only to a host listed in
 * idemgate.allowed_http_hosts; a numeric host in a non-public range (loopback,
 * private, link-local, ...) only when listed, whatever the scheme; no other
 * scheme, no user info, nothing libcurl cannot parse. When not, *why
 * (palloc'd) says why. The dispatcher calls it again before each send, since
 * the setting may have changed.
 */
extern bool EndpointUrlAllowed(const char *url, char **why);

/*
 * EndpointHostListed tells whether url's host is listed in
 * idemgate.allowed_http_hosts: then it may connect to non-public
 * addresses (src/delivery/http.c checks every other connection).
 */
extern bool EndpointHostListed(const char *url);

/*
 * CheckEndpointHeaders validates an endpoint's extra headers (a JSON object
 * of string values, HTTP token names, no CR/LF, none the dispatcher sets
 * itself, no duplicates) and returns their names as a JSON array for the
 * audit trail (never the values, which may be secrets). 22023 otherwise.
 */
extern Jsonb *CheckEndpointHeaders(Jsonb *headers);
/* IsDispatcherHeader: a header name the dispatcher sets itself (any case). */
extern bool IsDispatcherHeader(const char *name);

/*
 * RequireEndpointUrl refuses (22023) the url argument of a registration
 * when EndpointUrlAllowed does not allow it. HeadersArg returns argument
 * argno, an endpoint's headers (not NULL, checked by CheckEndpointHeaders
 * and CheckSecretReferences), and their names in *names.
 */
extern void RequireEndpointUrl(const char *url);
extern Jsonb *HeadersArg(FunctionCallInfo fcinfo, int argno, Jsonb **names);

/*
 * UpsertEndpoint creates or replaces the endpoint row of effect_type
 * (register_endpoint, register_rerun) and tells whether it was created.
 * The caller checked every value. Must be called inside SPI.
 */
extern bool UpsertEndpoint(text *effect_type, text *url, Interval *timeout, int32 max_attempts,
						   bool honors, Jsonb *headers, text *provider_id_field);

/*
 * AuditEndpointUrl adds the scheme and a fingerprint of the host of url to
 * an event's details: never the host itself, the path or the query.
 */
extern void AuditEndpointUrl(EventDetails *details, const char *url);

/* StoreEndpointLimits writes the limits of a registered endpoint (inside SPI). */
extern void StoreEndpointLimits(text *effect_type, Datum rate, bool rate_null,
								Datum max_in_flight, bool max_null);

#endif
