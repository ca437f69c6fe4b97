/*-------------------------------------------------------------------------
 *
 * src/delivery/answer_body.h
 *	  Reading what a provider answered: the provider id in a JSON body, and
 *	  the start of an error body.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_ANSWER_BODY_H
#define IDEMGATE_ANSWER_BODY_H

#include "postgres.h"
#include "core/idemgate_limits.h"



extern char *ProviderIdFrom(const char *body, size_t len, const char *field);
extern char *ErrorBodyExcerpt(const char *body, size_t len);

#endif
