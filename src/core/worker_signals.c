/*-------------------------------------------------------------------------
 *
 * src/core/worker_signals.c
 *	  Signal handling shared by the launcher and the dispatchers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"

#include "core/worker_signals.h"

volatile sig_atomic_t got_sigterm = false;

/* IdemgateSigterm asks the worker to finish its loop. */
void
IdemgateSigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* ReloadConfigIfPending applies a SIGHUP. */
void
ReloadConfigIfPending(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}
