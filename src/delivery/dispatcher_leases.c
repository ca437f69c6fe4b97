/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher_leases.c
 *	  Lease owners that name their dispatcher, and settling at once the leases
 *	  of dispatchers that are gone (docs/dispatcher.md, "Shutdown and crashes":
 *	  after a restart or a crash, the previous server life's leases are settled
 *	  at once, not after their timeout).
 *
 * Design note. A dispatcher's claim stamps every claimed effect with a
 * lease owner uuid. Instead of a random (version 4) uuid it uses a
 * version 8 uuid that says who holds the lease:
 *
 *   bytes 0-3   life id: random, new each time shared memory is set up
 *               (server start, and every crash restart — every process
 *               of the previous life is dead by then)
 *   byte  4     dispatcher slot
 *   byte  5     incarnation of that slot in this life (low 8 bits)
 *   byte  6     0x8_ (version 8) + 4 random bits
 *   byte  7     0xD1, our marker
 *   byte  8     RFC 4122 variant + 6 random bits
 *   bytes 9-15  random (distinct per claim); on Citus bytes 9-10 are the
 *               node's group id, so a node settles only its own gone
 *               dispatchers' leases (another node's may be alive)
 *
 * Pull workers (claim_effects) get version 4 owners, so they never match.
 * When a dispatcher starts, it settles (exactly as an expired lease is
 * settled: unknown, or pending for endpoints that honour the key) every
 * sending effect whose owner is a dispatcher of another life, or an
 * earlier incarnation of its own slot in this life (a dispatcher that died
 * by ERROR or was restarted by the launcher). Those processes are gone, so
 * the requests they had in flight can never be recorded; waiting for the
 * lease to expire (endpoint timeout + 10 s) only delays the retry or the
 * operator's decision. Live dispatchers of this life are never touched:
 * other slots' earlier incarnations are settled when those slots start
 * again (or by lease expiry).
 *
 * How it is done: the matching leases are marked expired (lease_expires_at
 * moved to just before now()), then SettleExpiredLeases (src/outbox/outbox.c)
 * settles them with the usual events and dead letters.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "core/crypto.h"
#include "delivery/dispatcher_leases.h"
#include "citus/distributed.h"
#include "citus/shard_buckets.h"
#include "core/dispatcher_shmem.h"
#include "outbox/outbox.h"
#include "outbox/outbox_dispatch.h"


static uint32 my_life = 0;
static int	my_slot = -1;
static uint8 my_incarnation = 0;
static int	my_group = -1;		/* Citus group id, -1 on a single node */

/*
 * DispatcherLeaseNode notes and returns this node's Citus group
 * (docs/citus.md; 0 is the coordinator), or -1 on a single node. Called in
 * a transaction, before claims.
 */
int
DispatcherLeaseNode(void)
{
	my_group = IdemgateIsDistributed() ? LocalGroupId() : -1;
	return my_group;
}

/* DispatcherLeaseBegin notes this dispatcher's life, slot and incarnation. */
void
DispatcherLeaseBegin(int slot)
{
	DispatcherSlot *s = &DispatcherShmem->slots[slot];

	my_life = DispatcherShmem->life_id;
	my_slot = slot;
	my_incarnation = (uint8) pg_atomic_add_fetch_u32(&s->incarnation, 1);
}

/* DispatcherLeaseOwner makes a fresh lease owner for one claim (see above). */
void
DispatcherLeaseOwner(pg_uuid_t *owner)
{
	Assert(my_slot >= 0);
	RandomBytes(owner->data, UUID_LEN);
	owner->data[0] = (uint8) (my_life >> 24);
	owner->data[1] = (uint8) (my_life >> 16);
	owner->data[2] = (uint8) (my_life >> 8);
	owner->data[3] = (uint8) my_life;
	owner->data[4] = (uint8) my_slot;
	owner->data[5] = my_incarnation;
	owner->data[6] = (owner->data[6] & 0x0f) | 0x80;	/* version 8 */
	owner->data[7] = DISPATCHER_LEASE_MARKER;
	owner->data[8] = (owner->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	if (my_group >= 0)
	{
		owner->data[9] = (uint8) (my_group >> 8);
		owner->data[10] = (uint8) my_group;
	}
}

/*
 * SettleGoneDispatchersLeases settles the leases of dispatchers that are
 * gone (see the design note). Returns how many effects were settled. Must
 * be called inside SPI.
 */
int
SettleGoneDispatchersLeases(void)
{
	bytea	   *life = palloc(VARHDRSZ + 4);
	int			settled = 0;
	int			n;

	SET_VARSIZE(life, VARHDRSZ + 4);
	((uint8 *) VARDATA(life))[0] = (uint8) (my_life >> 24);
	((uint8 *) VARDATA(life))[1] = (uint8) (my_life >> 16);
	((uint8 *) VARDATA(life))[2] = (uint8) (my_life >> 8);
	((uint8 *) VARDATA(life))[3] = (uint8) my_life;
	if (ExpireGoneDispatchersLeases(life, my_slot, my_incarnation) == 0)
		return 0;
	/* SettleExpiredLeases works in batches; a few are enough for any backlog. */
	for (int i = 0; i < 1000 && (n = SettleExpiredLeases(NULL)) > 0; i++)
		settled += n;
	return settled;
}
