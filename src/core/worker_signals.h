/*-------------------------------------------------------------------------
 *
 * src/core/worker_signals.h
 *	  What the launcher and the dispatchers share as background workers:
 *	  the SIGTERM flag and config reload.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_WORKER_SIGNALS_H
#define IDEMGATE_WORKER_SIGNALS_H

#include "postgres.h"

#include <signal.h>

extern volatile sig_atomic_t got_sigterm;

extern void IdemgateSigterm(SIGNAL_ARGS);
extern void ReloadConfigIfPending(void);

#endif
