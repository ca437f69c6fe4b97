/*-------------------------------------------------------------------------
 *
 * src/ledger/tombstones.h
 *	  What purge keeps of a run: its key's digest, its payload's digest,
 *	  its final state and when it finished and was purged.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_TOMBSTONES_H
#define IDEMGATE_TOMBSTONES_H

#include "postgres.h"

/* What a claim needs of a tombstone. */
typedef struct Tombstone
{
	int64		payload_digest; /* the first 8 bytes of the payload hash */
	char		final_state;	/* 'c' completed, 'f' failed_terminal */
} Tombstone;

/*
 * FindTombstone looks for key's tombstone in a snapshot taken now (a purge
 * that committed before the call is seen, whatever the isolation level);
 * false at once when there is no tombstone at all (or no table: an older
 * schema). Must be called inside SPI.
 */
extern bool FindTombstone(text *key, Tombstone *t);

/* TombstoneMatches tells whether payload_hash (32 bytes) is t's payload. */
extern bool TombstoneMatches(const Tombstone *t, bytea *payload_hash);

/* TombstonesInstalled: the schema has idemgate.tombstones (1.3). */
extern bool TombstonesInstalled(void);

/* TombstonesDistributed: idemgate.tombstones is a Citus table. */
extern bool TombstonesDistributed(void);

/*
 * The CTE purge adds after "ru" (the deleted runs, RETURNING
 * idempotency_key, payload_hash, state, updated_at, and bucket on Citus)
 * to keep their tombstones; $2 is idemgate.tombstone_retention (0: none
 * kept). BUCKET_COL and BUCKET_VAL add the bucket on Citus, KEY the
 * conflict key (the primary key, which includes it there).
 */
#define TOMBSTONE_INSERT(BUCKET_COL, BUCKET_VAL, KEY) \
	", tb AS (" \
	" INSERT INTO idemgate.tombstones (key_digest, payload_digest, final_state, " \
	"finished_at, purged_at" \
	BUCKET_COL ")" \
	" SELECT " TOMBSTONE_DIGEST("pg_catalog.sha256(pg_catalog.convert_to(ru.idempotency_key," \
	"                                               pg_catalog.getdatabaseencoding()))") "," \
	"        " TOMBSTONE_DIGEST("ru.payload_hash") "," \
	"        CASE ru.state WHEN 'completed' THEN 'c' ELSE 'f' END::pg_catalog.\"char\"," \
	"        ru.updated_at, pg_catalog.now()" BUCKET_VAL \
	"   FROM ru WHERE $2 OPERATOR(pg_catalog.>) 0" \
	" ON CONFLICT (" KEY ") DO NOTHING RETURNING 1" \
	")"
#define TOMBSTONE_INSERT_CTE TOMBSTONE_INSERT("", "", "key_digest")
#define TOMBSTONE_INSERT_DIST_CTE TOMBSTONE_INSERT(", bucket", ", ru.bucket", "key_digest, bucket")

/* The first 8 bytes of digest D as a bigint (big-endian, as DigestInt64). */
#define TOMBSTONE_DIGEST(D) \
	"pg_catalog.bit_in(('x' OPERATOR(pg_catalog.||) pg_catalog.encode(pg_catalog.substr(" D ", " \
	"1, 8), 'hex'))" \
	"::pg_catalog.cstring, 0, 64)::pg_catalog.int8"

#endif
