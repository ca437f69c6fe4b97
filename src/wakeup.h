/*-------------------------------------------------------------------------
 *
 * src/wakeup.h
 *	  Waking the dispatcher when new effects become due.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_WAKEUP_H
#define IDEMGATE_WAKEUP_H

/*
 * WakeDispatcherAtCommit asks for the dispatchers to be woken when the
 * current transaction commits (nothing happens on abort, or when the
 * library is not preloaded). Cheap to call many times per transaction.
 */
extern void WakeDispatcherAtCommit(void);

#endif
