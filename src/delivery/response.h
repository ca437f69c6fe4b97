/*-------------------------------------------------------------------------
 *
 * src/delivery/response.h
 *	  Reading what a provider answered: the provider id in a JSON body, and
 *	  the start of an error body.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_RESPONSE_H
#define IDEMGATE_RESPONSE_H

#include "postgres.h"
#include "core/idemgate_limits.h"



extern char *ProviderIdFrom(const char *body, size_t len, const char *field);
extern char *ErrorBodyExcerpt(const char *body, size_t len);

#endif
