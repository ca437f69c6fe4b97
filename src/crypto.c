/*-------------------------------------------------------------------------
 *
 * src/crypto.c
 *	  Hashing and randomness. OpenSSL does the cryptography; this file only
 *	  adapts it to PostgreSQL types and reports its failures as errors.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "crypto.h"

/* Sha256 writes the SHA-256 digest of data into digest (32 bytes). */
void
Sha256(const void *data, size_t len, uint8 *digest)
{
	unsigned int outlen = 0;

	if (EVP_Digest(data, len, digest, &outlen, EVP_sha256(), NULL) != 1 ||
		outlen != IDEMGATE_SHA256_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute SHA-256: %s",
						ERR_reason_error_string(ERR_get_error()))));
}

/* Sha256Bytea returns the SHA-256 digest of data as a palloc'd bytea. */
bytea *
Sha256Bytea(const void *data, size_t len)
{
	bytea	   *result = palloc(VARHDRSZ + IDEMGATE_SHA256_LEN);

	SET_VARSIZE(result, VARHDRSZ + IDEMGATE_SHA256_LEN);
	Sha256(data, len, (uint8 *) VARDATA(result));
	return result;
}

/*
 * HashJsonbPayload hashes the canonical text of a jsonb value: jsonb's own
 * output (sorted keys, no duplicates), so clients get the same digest with
 * sha256(convert_to(payload::text, 'UTF8')).
 */
bytea *
HashJsonbPayload(Jsonb *payload)
{
	char	   *text = JsonbToCString(NULL, &payload->root, VARSIZE(payload));
	bytea	   *digest = Sha256Bytea(text, strlen(text));

	pfree(text);
	return digest;
}

/* RandomBytes fills buf with len bytes from OpenSSL's CSPRNG. */
void
RandomBytes(uint8 *buf, int len)
{
	if (RAND_bytes(buf, len) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random bytes: %s",
						ERR_reason_error_string(ERR_get_error()))));
}

/* RandomUuid returns a fresh version 4 UUID. */
pg_uuid_t *
RandomUuid(void)
{
	pg_uuid_t  *uuid = palloc(sizeof(pg_uuid_t));

	RandomBytes(uuid->data, UUID_LEN);
	uuid->data[6] = (uuid->data[6] & 0x0f) | 0x40;	/* version 4 */
	uuid->data[8] = (uuid->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	return uuid;
}

/* Base64UrlEncode encodes data as base64url without padding. */
char *
Base64UrlEncode(const uint8 *data, int len)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char	   *out = palloc((len * 4) / 3 + 4);
	char	   *p = out;
	int			i;

	for (i = 0; i + 2 < len; i += 3)
	{
		uint32		v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];

		*p++ = alphabet[(v >> 18) & 63];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = alphabet[(v >> 6) & 63];
		*p++ = alphabet[v & 63];
	}
	if (len - i == 1)
	{
		uint32		v = data[i] << 16;

		*p++ = alphabet[(v >> 18) & 63];
		*p++ = alphabet[(v >> 12) & 63];
	}
	else if (len - i == 2)
	{
		uint32		v = (data[i] << 16) | (data[i + 1] << 8);

		*p++ = alphabet[(v >> 18) & 63];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = alphabet[(v >> 6) & 63];
	}
	*p = '\0';
	return out;
}
