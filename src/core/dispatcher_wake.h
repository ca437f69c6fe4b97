/*-------------------------------------------------------------------------
 *
 * src/core/dispatcher_wake.h
 *	  Waking the dispatchers when a transaction that made effects due
 *	  commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCHER_WAKE_H
#define IDEMGATE_DISPATCHER_WAKE_H

/*
 * WakeDispatcherAtCommit asks for the dispatchers to be woken when the
 * current transaction commits (nothing happens on abort, or when the
 * library is not preloaded). Cheap to call many times per transaction.
 */
extern void WakeDispatcherAtCommit(void);

#endif
