/*-------------------------------------------------------------------------
 *
 * src/citus/shard_autocommit.h
 *	  On Citus, a claim that is its whole transaction runs on its key's
 *	  node in one round trip (src/citus/shard_autocommit.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SHARD_AUTOCOMMIT_H
#define IDEMGATE_SHARD_AUTOCOMMIT_H

#include "postgres.h"
#include "fmgr.h"

extern void InstallShardAutocommit(void);
extern bool CallIsWholeTransaction(FunctionCallInfo fcinfo);
extern int	BeginShardAutocommit(void);
extern int	BeginShardTransactions(void);
extern void EndShardAutocommit(int nestlevel);

#endif
