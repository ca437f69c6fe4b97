/*-------------------------------------------------------------------------
 *
 * src/core/crypto.h
 *	  SHA-256, CSPRNG bytes, random UUIDs and base64url, all from OpenSSL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_CRYPTO_H
#define IDEMGATE_CRYPTO_H

#include "postgres.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#define IDEMGATE_SHA256_LEN 32

extern void Sha256(const void *data, size_t len, uint8 *digest);
extern bytea *Sha256Bytea(const void *data, size_t len);
extern bytea *HashJsonbPayload(Jsonb *payload);
extern void RandomBytes(uint8 *buf, int len);
extern pg_uuid_t *RandomUuid(void);
extern pg_uuid_t *TimeOrderedUuid(void);
extern char *Base64UrlEncode(const uint8 *data, int len);

#endif
