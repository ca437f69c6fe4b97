/*-------------------------------------------------------------------------
 *
 * src/policy/secrets.h
 *	  Provider credentials outside the database: header values that name a
 *	  secret of idemgate.secrets_file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SECRETS_H
#define IDEMGATE_SECRETS_H

#include "utils/jsonb.h"

/*
 * CheckSecretReferences raises 22023 when a header value of headers (an
 * object of strings, already checked) holds a malformed ${secret:...} or
 * names a secret the file lacks, or the file cannot be used. For
 * register_endpoint.
 */
extern void CheckSecretReferences(Jsonb *headers);

/*
 * ResolveSecrets returns line with each ${secret:NAME} replaced by the
 * secret's value (palloc'd; line itself when it names none). When a name
 * is not available it returns NULL and sets *missing to that name. Never
 * raises, never logs a value. For the dispatcher.
 */
extern char *ResolveSecrets(const char *line, char **missing);

/*
 * SecretsProblem: why the file cannot be used (unset, unreadable, its
 * mode, ...), as of the last ResolveSecrets, or NULL when it can.
 */
extern const char *SecretsProblem(void);

/* Seconds an effect whose secret is missing waits before it is tried again. */
#define IDEMGATE_SECRET_HOLD_SECS	30

#endif
