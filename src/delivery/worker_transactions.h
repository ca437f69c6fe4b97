/*-------------------------------------------------------------------------
 *
 * src/delivery/worker_transactions.h
 *	  How a dispatcher runs its transactions (src/delivery/worker_transactions.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_WORKER_TRANSACTIONS_H
#define IDEMGATE_WORKER_TRANSACTIONS_H

#include "postgres.h"

extern bool RunInTransaction(void (*work) (void *arg), void *arg, MemoryContext loop_cxt);
extern bool ExtensionInstalled(void);
extern bool SchemaMatchesLibrary(void);
extern void StopIfPostmasterDied(void);

#endif
