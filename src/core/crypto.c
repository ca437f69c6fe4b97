/*-------------------------------------------------------------------------
 *
 * src/core/crypto.c
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
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/crypto.h"

/*
 * Sha256 writes the SHA-256 digest of data into digest (32 bytes). The
 * digest method and context are made once per process and reused: with
 * OpenSSL 3, EVP_Digest() fetches the method and allocates a context on
 * every call, which cost more than hashing a payload (claim hashes each).
 */
void
Sha256(const void *data, size_t len, uint8 *digest)
{
	static const EVP_MD *md = NULL;
	static EVP_MD_CTX *ctx = NULL;
	unsigned int outlen = 0;

	if (ctx == NULL)
	{
		EVP_MD_CTX *c = EVP_MD_CTX_new();

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
		if (md == NULL)
			md = EVP_MD_fetch(NULL, "SHA256", NULL);
#else
		md = EVP_sha256();
#endif
		if (c == NULL || md == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not set up SHA-256: %s",
							ERR_reason_error_string(ERR_get_error()))));
		ctx = c;
	}
	if (EVP_DigestInit_ex(ctx, md, NULL) != 1 ||
		EVP_DigestUpdate(ctx, data, len) != 1 ||
		EVP_DigestFinal_ex(ctx, digest, &outlen) != 1 ||
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

/*
 * RandomUuid returns a fresh version 4 UUID. Its bytes come from a buffer
 * filled by OpenSSL's CSPRNG 64 UUIDs at a time (one RAND_bytes call cost
 * as much as the rest of a claim's C code); the buffer belongs to the
 * process that filled it, so a forked child never reuses its parent's.
 */
pg_uuid_t *
RandomUuid(void)
{
	static uint8 pool[64 * UUID_LEN];
	static int	used = sizeof(pool);
	static int	pool_pid = 0;
	pg_uuid_t  *uuid = palloc(sizeof(pg_uuid_t));

	if (used >= (int) sizeof(pool) || pool_pid != MyProcPid)
	{
		RandomBytes(pool, sizeof(pool));
		used = 0;
		pool_pid = MyProcPid;
	}
	memcpy(uuid->data, pool + used, UUID_LEN);
	explicit_bzero(pool + used, UUID_LEN);
	used += UUID_LEN;
	uuid->data[6] = (uuid->data[6] & 0x0f) | 0x40;	/* version 4 */
	uuid->data[8] = (uuid->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	return uuid;
}

/*
 * TimeOrderedUuid returns a fresh version 7 UUID (RFC 9562, 5.7): the Unix
 * time in milliseconds in its first 48 bits, then 74 random bits. An
 * effect's id is the key of outbox_pkey, which every claim and completion
 * probes and every state change inserts into: with random ids each new
 * effect lands on a random leaf of an index as large as the history
 * (bench/dispatch with a million finished effects: 0.65 of the empty
 * database's deliveries per second), with time-ordered ones on the few
 * leaves at its right end, hot in cache.
 */
pg_uuid_t *
TimeOrderedUuid(void)
{
	pg_uuid_t  *uuid = RandomUuid();
	uint64		ms = (uint64) ((GetCurrentTimestamp() / 1000) +
							   (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
							   (uint64) (SECS_PER_DAY * 1000));

	for (int i = 5; i >= 0; i--, ms >>= 8)
		uuid->data[i] = (uint8) (ms & 0xff);
	uuid->data[6] = (uuid->data[6] & 0x0f) | 0x70;	/* version 7 */
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
