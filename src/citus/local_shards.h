/*-------------------------------------------------------------------------
 *
 * src/citus/local_shards.h
 *	  A routed statement run on this node's own shard placement as a local
 *	  table, without the distributed planner (docs/citus.md, "Local
 *	  shards").
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_LOCAL_SHARDS_H
#define IDEMGATE_LOCAL_SHARDS_H

#include "postgres.h"
#include "executor/spi.h"

/* A statement's plans on each shard placed here (SavedStatement.local). */
typedef struct LocalForms
{
	uint32		generation;		/* of the shard map they were made for */
	int			nshards;
	bool		refused;		/* names a table with no local form */
	SPIPlanPtr *routed;			/* per shard index: with "bucket = $N" */
	bool	   *routed_planned;
	SPIPlanPtr *in_buckets;		/* per shard index: with "bucket = ANY ($N)" */
	bool	   *in_buckets_planned;
	SPIPlanPtr *whole;			/* per shard index: without a bucket test */
	bool	   *whole_planned;
} LocalForms;

/* Which of a statement's forms on a shard (LocalShardPlan). */
typedef enum LocalForm
{
	LOCAL_ROUTED,				/* "bucket = $N": one bucket */
	LOCAL_IN_BUCKETS,			/* "bucket = ANY ($N)": some of the shard's */
	LOCAL_WHOLE					/* no bucket test: rows named by unique ids */
} LocalForm;

/*
 * LocalShardFor returns the shard index of bucket when that shard is placed
 * on this node and a statement of this transaction may read and write it
 * there directly: its Citus metadata lock is held (a move or split waits
 * for this transaction) and the placement was found here under it. Else -1:
 * the statement goes through Citus.
 */
extern int	LocalShardFor(int bucket);

/*
 * LocalShardPlan returns the plan on shard index shard of sql's distributed
 * form route_n (route: src/citus/statements.c's RoutedSql, which calls
 * this file), with each table named by its placement here,
 * prepared on first use with cursor_options; NULL when the statement names
 * a table that has no local form (its rows take ids from a sequence, or it
 * is not a Citus table). *planned is the plan's "executed once" flag.
 */
typedef char *(*RouteSqlFn) (const char *sql, int n);
extern SPIPlanPtr LocalShardPlan(LocalForms **forms, const char *sql, RouteSqlFn route,
								 int route_n, int nargs, const Oid *argtypes,
								 int cursor_options, int shard, LocalForm form,
								 bool **planned);

/*
 * BeforeMultiShardStatement is called before a statement Citus runs on
 * several shards: after a direct write in this transaction, Citus is made
 * to run its tasks on this node's shards in this backend (it would
 * otherwise open connections that cannot see the write), and no direct
 * access follows a statement whose tasks may have used such connections.
 */
extern void BeforeMultiShardStatement(void);

#endif
