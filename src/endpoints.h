/*-------------------------------------------------------------------------
 *
 * src/endpoints.h
 *	  Where effects are delivered, and which URLs are allowed at all.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_ENDPOINTS_H
#define IDEMGATE_ENDPOINTS_H

#include "postgres.h"

/*
 * EndpointUrlAllowed tells whether url may receive effects under the current
 * settings: https always; http only to a host listed in
 * idemgate.allowed_http_hosts; a numeric host in a non-public range
 * (loopback, private, link-local, ...) only when listed, whatever the
 * scheme; no other scheme, no user info, nothing libcurl cannot parse. When not, *why (palloc'd) says why. The dispatcher
 * calls it again before each send, since the setting may have changed.
 */
extern bool EndpointUrlAllowed(const char *url, char **why);

/*
 * EndpointHostListed tells whether url's host is listed in
 * idemgate.allowed_http_hosts: then it may connect to non-public
 * addresses (src/http.c checks every other connection).
 */
extern bool EndpointHostListed(const char *url);

#endif
