/*-------------------------------------------------------------------------
 *
 * src/dispatcher_status.c
 *	  dispatcher_status(): the running dispatchers as shared memory sees them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "port/atomics.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "dispatcher_shmem.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(idemgate_dispatcher_status);

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

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (DispatcherShmem == NULL)
		return (Datum) 0;
	for (int i = 0; i < IDEMGATE_MAX_DISPATCHERS; i++)
	{
		DispatcherSlot *s = &DispatcherShmem->slots[i];
		Datum		values[11];
		bool		nulls[11] = {0};
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
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
