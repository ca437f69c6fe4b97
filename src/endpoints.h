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
 * idemgate.allowed_http_hosts; no other scheme, no user info, nothing
 * libcurl cannot parse. When not, *why (palloc'd) says why. The dispatcher
 * calls it again before each send, since the setting may have changed.
 */
extern bool EndpointUrlAllowed(const char *url, char **why);

#endif
