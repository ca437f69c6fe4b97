/*-------------------------------------------------------------------------
 *
 * at_commit_flag.h
 *	  A flag a transaction callback reads at the transaction's end.
 *
 * The dispatchers' wake-up (core/dispatcher_wake.c) and the send barrier
 * (delivery/send_barrier.c) each set a flag that their callback acts on at
 * commit and clears; the callback stays registered for the backend's life,
 * so it is registered once, with the first flag.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_AT_COMMIT_FLAG_H
#define IDEMGATE_AT_COMMIT_FLAG_H

#include "postgres.h"
#include "access/xact.h"

/* FlagAtCommit sets *flag for cb, registering cb unless *registered. */
static inline void
FlagAtCommit(bool *flag, bool *registered, XactCallback cb)
{
	if (!*registered)
	{
		RegisterXactCallback(cb, NULL);
		*registered = true;
	}
	*flag = true;
}

#endif
