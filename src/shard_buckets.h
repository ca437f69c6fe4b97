/*-------------------------------------------------------------------------
 *
 * src/shard_buckets.h
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

extern List *ShardBucketSets(ShardScope scope);
extern int	LocalGroupId(void);

#endif
