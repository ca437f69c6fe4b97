/*-------------------------------------------------------------------------
 *
 * src/policy/status_url.h
 *	  Status URLs (SPEC §22): the template an endpoint's provider answers
 *	  status look-ups at, and one effect's look-up URL made from it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_STATUS_URL_H
#define IDEMGATE_STATUS_URL_H

#include "postgres.h"

#define STATUS_URL_EFFECT_ID "{effect_id}"
#define STATUS_URL_PROVIDER_ID "{provider_id}"

/*
 * StatusUrlProblem says what is wrong with a template's placeholders (it
 * must name {effect_id} and no other than {provider_id}), NULL if nothing.
 */
extern const char *StatusUrlProblem(const char *template);

/*
 * StatusUrlFor makes the look-up URL of one effect: {effect_id} becomes
 * the effect id, {provider_id} the provider id percent-encoded (NULL
 * when the template needs one and provider_id is NULL). palloc'd.
 */
extern char *StatusUrlFor(const char *template, const char *effect_id, const char *provider_id);

#endif
