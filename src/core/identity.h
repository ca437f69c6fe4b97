/*-------------------------------------------------------------------------
 *
 * src/core/identity.h
 *	  Comparing approver identities (src/core/identity.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_IDENTITY_H
#define IDEMGATE_IDENTITY_H

#include "postgres.h"

/*
 * AudienceForm returns the form an audience compares: NFKC case folding,
 * White_Space trimmed, nothing looser (src/core/identity.c).
 */
extern char *AudienceForm(const char *s, int len);

/*
 * SameIdentity tells whether two identities are the same person for
 * separation of duties: case, spacing, invisible characters, composition
 * and confusable look-alikes do not make a second person.
 */
extern bool SameIdentity(const char *a, const char *b);

#endif
