/*-------------------------------------------------------------------------
 *
 * src/citus/shard_buckets.h
 *	  The shards of a distributed install as sets of buckets, for scans
 *	  made one shard at a time (docs/citus.md, "Delivery").
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SHARD_BUCKETS_H
#define IDEMGATE_SHARD_BUCKETS_H

#include "postgres.h"
#include "nodes/pg_list.h"

/* Which shards: those stored on this node, or those a scan here should visit. */
typedef enum
{
	SHARDS_LOCAL,				/* placements on this node */
	SHARDS_SCAN					/* all of them on the coordinator, else local */
} ShardScope;

/* What a scan made one shard at a time looks for (ShardBucketsWithWork). */
typedef enum
{
	SHARD_DUE_EFFECTS,			/* the dispatcher's claim */
	SHARD_EXPIRED_LEASES,		/* SettleExpiredLeases */
	SHARD_EXPIRED_APPROVALS,	/* ExpireApprovals */
	SHARD_UNKNOWN_EFFECTS,		/* status look-ups (src/outbox/outbox_lookups.c) */
	SHARD_APPROVED_RUNS,		/* CompleteSettledRuns */
	SHARD_WORK_KINDS
} ShardWork;

/* A shard of runs, as the scans made one shard at a time see it. */
typedef struct ShardSet
{
	int64		shardid;		/* hash key */
	Datum		buckets;		/* int4[] in TopMemoryContext */
	bool		local;			/* placed on this node (as of the last listing) */
	Oid			relid[SHARD_WORK_KINDS];	/* this node's shard table, once found */
	void	   *plan[SHARD_WORK_KINDS]; /* SPIPlanPtr of the look-up, kept */
} ShardSet;

extern List *ShardBucketSets(ShardScope scope);
extern Datum ShardBucketsWithWork(ShardSet *set, ShardWork work);
extern bool AnyShardHasWork(List *sets, ShardWork work);
extern int	LocalGroupId(void);

#endif
