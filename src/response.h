/*-------------------------------------------------------------------------
 *
 * src/response.h
 *	  Reading what a provider answered: the provider id in a JSON body, and
 *	  the start of an error body.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RESPONSE_H
#define IDEMGATE_RESPONSE_H

#include "postgres.h"

/* Longest provider id kept. */
#define MAX_PROVIDER_ID		1000
/* Deepest JSON nesting parsed in a response body. */
#define MAX_PROVIDER_JSON_DEPTH 100

/* Most bytes of a failed response's body kept in last_error (SPEC §14). */
#define ERROR_BODY_KEPT		1024

extern char *ProviderIdFrom(const char *body, size_t len, const char *field);
extern char *ErrorBodyExcerpt(const char *body, size_t len);

#endif
