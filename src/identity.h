/*-------------------------------------------------------------------------
 *
 * src/identity.h
 *	  Comparing approver identities (src/identity.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_IDENTITY_H
#define IDEMGATE_IDENTITY_H

#include "postgres.h"

/*
 * NormalizeIdentity returns the form of an identity (approver, requester,
 * audience member) that separation of duties and audiences compare:
 * format characters removed, Unicode NFC, lower-cased, trimmed. palloc'd.
 */
extern char *NormalizeIdentity(const char *s, int len);

/* SameIdentity tells whether two identities are the same person. */
extern bool SameIdentity(const char *a, const char *b);

#endif
