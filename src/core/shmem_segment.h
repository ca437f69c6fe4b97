/*-------------------------------------------------------------------------
 *
 * src/core/shmem_segment.h
 *	  One named shared memory segment per module, set up from _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_SHMEM_SEGMENT_H
#define IDEMGATE_SHMEM_SEGMENT_H

#include "postgres.h"

/* Called once, in the postmaster, when the segment is first created. */
typedef void (*SegmentInitFn) (void *segment);

/*
 * DefineShmemSegment asks for a segment of size bytes named name; once
 * shared memory is set up (and in every backend that attaches to it),
 * *location points at it. Only from _PG_init while preloading; *location
 * stays NULL otherwise, which callers take as "not preloaded".
 */
extern void DefineShmemSegment(const char *name, Size size, SegmentInitFn init,
							   void **location);

#endif
