/*-------------------------------------------------------------------------
 *
 * src/core/dispatcher_wake.c
 *	  Waking the dispatchers when a transaction that made effects due
 *	  commits.
 *
 * Design note. A transaction that makes effects due calls
 * WakeDispatcherAtCommit, which registers a transaction callback once per
 * backend and raises a flag. On XACT_EVENT_COMMIT the callback sets every
 * dispatcher's latch, so the effects go out right after they become
 * visible; on abort (or PREPARE) the flag is simply dropped. Polling
 * (idemgate.poll_interval) remains only as the fallback for effects that
 * become due by time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"

#include "core/dispatcher_shmem.h"
#include "core/dispatcher_wake.h"
#include "core/at_commit_flag.h"

static bool xact_callback_registered = false;
static bool wake_at_commit = false;

/* WakeAtCommitCallback wakes the dispatchers when a flagged transaction commits. */
static void
WakeAtCommitCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_at_commit)
			{
				wake_at_commit = false;
				WakeDispatchers();
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			wake_at_commit = false;
			break;
		default:
			break;
	}
}

/* WakeDispatcherAtCommit flags the current transaction (see dispatcher_wake.h). */
void
WakeDispatcherAtCommit(void)
{
	if (DispatcherShmem != NULL)
		FlagAtCommit(&wake_at_commit, &xact_callback_registered, WakeAtCommitCallback);
}
