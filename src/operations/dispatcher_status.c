/*-------------------------------------------------------------------------
 *
 * src/operations/dispatcher_status.c
 *	  dispatcher_status(): the running dispatchers as shared memory sees them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/memutils.h"
#include "fmgr.h"
#include "funcapi.h"
#include "port/atomics.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "core/dispatcher_shmem.h"
#include "core/extension_notice.h"
#include "citus/distributed.h"
#include "core/guc.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_dispatcher_status);

/* LocalNodeName names this node as Citus does ("host:port"), or NULL. */
static char *
LocalNodeName(void)
{
	char	   *name = NULL;

	ConnectSPI();
	if (SPI_execute("SELECT n.nodename OPERATOR(pg_catalog.||) ':' "
					"OPERATOR(pg_catalog.||) n.nodeport"
					" FROM pg_catalog.pg_dist_node n, pg_catalog.pg_dist_local_group g"
					" WHERE n.groupid OPERATOR(pg_catalog.=) g.groupid"
					"   AND n.noderole OPERATOR(pg_catalog.=) 'primary'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			name = MemoryContextStrdup(TopTransactionContext, v);
	}
	SPI_finish();
	return name;
}

/*
 * idemgate_dispatcher_status implements dispatcher_status(): one row per
 * running dispatcher with its counters since it started, and the database
 * it serves (every dispatcher connects to idemgate.database, fixed at
 * server start).
 */
Datum
idemgate_dispatcher_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	char	   *node = NULL;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (DispatcherShmem == NULL)
	{
		static bool said = false;	/* once per session: alert views call this too */

		if (!said)
			ereport(NOTICE,
					(errmsg(IDEMGATE_NOT_PRELOADED_MSG),
					 errdetail(IDEMGATE_NOT_PRELOADED_DETAIL),
					 errhint(IDEMGATE_NOT_PRELOADED_HINT)));
		said = true;
		return (Datum) 0;
	}
	if (rsinfo->setDesc->natts > 11 && IdemgateIsDistributed())
		node = LocalNodeName();
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		DispatcherSlot *s = &DispatcherShmem->slots[i];
		Datum		values[12];
		bool		nulls[12] = {0};
		int			pid = s->pid;
		TimestampTz last = (TimestampTz) pg_atomic_read_u64(&s->last_round_at);

		if (pid == 0)
			continue;
		values[0] = Int32GetDatum(i);
		values[1] = Int32GetDatum(pid);
		values[2] = TimestampTzGetDatum((TimestampTz) pg_atomic_read_u64(&s->started_at));
		values[3] = Int32GetDatum((int32) pg_atomic_read_u32(&s->in_flight));
		values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&s->rounds));
		values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&s->claimed));
		values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&s->completed));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&s->failed));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&s->released));
		values[9] = TimestampTzGetDatum(last);
		nulls[9] = (last == 0);
		if (rsinfo->setDesc->natts > 10)	/* 1.0's signature has no database */
		{
			values[10] = CStringGetTextDatum(IdemgateDatabase ? IdemgateDatabase : "");
			nulls[10] = (IdemgateDatabase == NULL);
		}
		if (rsinfo->setDesc->natts > 11)	/* 1.2: the node, on Citus */
		{
			nulls[11] = (node == NULL);
			if (node != NULL)
				values[11] = CStringGetTextDatum(node);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
