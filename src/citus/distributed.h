/*-------------------------------------------------------------------------
 *
 * src/citus/distributed.h
 *	  idemgate on Citus (docs/citus.md): whether this install is
 *	  distributed, and the bucket that routes a key, an effect id, an
 *	  approval id or a token to its shard.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISTRIBUTED_H
#define IDEMGATE_DISTRIBUTED_H

#include "postgres.h"
#include "utils/uuid.h"

/* Buckets are the first two bytes of SHA-256 of the key: 0 .. 65535. */
#define IDEMGATE_BUCKETS 65536

/* Keyless rows (operator events) live in bucket 0. */
#define IDEMGATE_KEYLESS_BUCKET 0

/* A distributed token: the 43-character secret, '.', 4 hex digits. */
#define IDEMGATE_TOKEN_SECRET_CHARS 43
#define IDEMGATE_ROUTED_TOKEN_CHARS (IDEMGATE_TOKEN_SECRET_CHARS + 5)

extern bool IdemgateIsDistributed(void);

/*
 * DistributedRelcacheHook, when set, is called from this file's relation
 * cache callback (src/citus/local_shards.c sets it: a second callback of
 * its own would take one of PostgreSQL's ten slots).
 */
extern void (*DistributedRelcacheHook) (Oid relid);
extern bool IdemgateTableIsDistributed(const char *name);
extern bool CitusWorkerBeforeDistribute(void);
extern int	KeyBucket(const char *key, int len);
extern int	UuidBucket(const pg_uuid_t *id);
extern void StampUuidBucket(pg_uuid_t *id, int bucket);
extern int	TokenBucket(const char *token, int len);
extern int	RoutedIdBucket(int64 id);
extern int	LegacyUuidBucket(const pg_uuid_t *id);
extern int	LegacyDeadLetterBucket(int64 id);
extern int	LegacyTokenBucket(bytea *token_hash);

#endif
