/*-------------------------------------------------------------------------
 *
 * src/wakeup.c
 *	  Waking the dispatcher after commit. (Placeholder until the dispatcher
 *	  lands: without a dispatcher there is nobody to wake.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "wakeup.h"

/* WakeDispatcherAtCommit does nothing until the dispatcher exists. */
void
WakeDispatcherAtCommit(void)
{
}
