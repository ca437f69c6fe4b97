/*-------------------------------------------------------------------------
 *
 * src/core/shmem_segment.c
 *	  One named shared memory segment per module, set up from _PG_init.
 *
 * Design note. The dispatchers' slots, the send barrier and the rate
 * limiter each own a segment of their own (ShmemInitStruct under its own
 * name, as pg_stat_statements does), so none of them reaches into
 * another's struct. The request/startup hook pair is the same for all of
 * them, so it is written once here: a module defines its segment from
 * _PG_init, and the hooks request and attach every defined segment.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "core/shmem_segment.h"

/* Segments defined by idemgate's modules (DefineShmemSegment's callers). */
#define MAX_SEGMENTS 8

typedef struct SegmentDef
{
	const char *name;
	Size		size;
	SegmentInitFn init;
	void	  **location;
} SegmentDef;

static SegmentDef segments[MAX_SEGMENTS];
static int	n_segments = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* RequestSegments reserves every defined segment. */
static void
RequestSegments(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < n_segments; i++)
		RequestAddinShmemSpace(MAXALIGN(segments[i].size));
}

/* AttachSegments creates (first time) or attaches every defined segment. */
static void
AttachSegments(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (int i = 0; i < n_segments; i++)
	{
		bool		found;
		void	   *seg = ShmemInitStruct(segments[i].name, segments[i].size, &found);

		if (!found)
			segments[i].init(seg);
		*segments[i].location = seg;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* DefineShmemSegment records a segment (see shmem_segment.h). */
void
DefineShmemSegment(const char *name, Size size, SegmentInitFn init, void **location)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	if (n_segments == MAX_SEGMENTS)
		elog(ERROR, "idemgate: too many shared memory segments");
	if (n_segments == 0)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = RequestSegments;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = AttachSegments;
	}
	segments[n_segments++] = (SegmentDef) {name, size, init, location};
}
