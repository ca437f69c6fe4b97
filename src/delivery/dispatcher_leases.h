/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher_leases.h
 *	  Lease owners that say which dispatcher (and which server life) holds
 *	  an effect, and settling the leases of dispatchers that are gone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCHER_LEASES_H
#define IDEMGATE_DISPATCHER_LEASES_H

#include "postgres.h"
#include "utils/uuid.h"

extern void DispatcherLeaseBegin(int slot);
extern int	DispatcherLeaseNode(void);
extern void DispatcherLeaseOwner(pg_uuid_t *owner);
extern int	SettleGoneDispatchersLeases(void);

#endif
