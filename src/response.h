/*-------------------------------------------------------------------------
 *
 * src/response.h
 *	  Reading what a provider answered: the provider id in a JSON body.
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

extern char *ProviderIdFrom(const char *body, size_t len, const char *field);

#endif
