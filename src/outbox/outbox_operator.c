/*-------------------------------------------------------------------------
 *
 * src/outbox/outbox_operator.c
 *	  The outbox statements of operator calls (cancel_effect,
 *	  cancel_in_window, resolve_effect, reinject with a payload, and the
 *	  reconciliation of unknown effects): lock one effect, then change it.
 *	  Part of the outbox module, like src/outbox/outbox_dispatch.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "citus/distributed.h"
#include "citus/statements.h"
#include "core/crypto.h"
#include "core/dispatcher_wake.h"
#include "outbox/outbox.h"

/* An operator's look at one effect: its row locked, with its run's state. */
static SavedStatement lock_effect_stmt = {
	"SELECT o.state, o.idempotency_key, o.effect_type, r.state"
	" FROM idemgate.outbox o"
	" LEFT JOIN idemgate.runs r "
	"ON r.idempotency_key OPERATOR(pg_catalog.=) o.idempotency_key/*@join r o*/"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/ FOR UPDATE OF o",
	1, {UUIDOID}
};

/* The same for cancel_in_window, with the effect's cancel window. */
static SavedStatement lock_effect_window_stmt = {
	"SELECT o.state, o.idempotency_key, o.effect_type, o.cancel_until,"
	"       o.cancel_until OPERATOR(pg_catalog.>) pg_catalog.now()"
	" FROM idemgate.outbox o"
	" WHERE o.effect_id OPERATOR(pg_catalog.=) $1/*@bucket o*//*@route $1*/ FOR UPDATE OF o",
	1, {UUIDOID}
};

static SavedStatement cancel_effect_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,"
	"     updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {UUIDOID}
};

static SavedStatement requeue_effect_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'pending', attempts = 0, next_attempt_at = pg_catalog.now(),"
	"     lease_owner = NULL, lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {UUIDOID}
};

static SavedStatement resolve_completed_stmt = {
	"UPDATE idemgate.outbox"
	" SET state = 'completed', provider_id = COALESCE($2, provider_id),"
	"     lease_expires_at = NULL, updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	2, {UUIDOID, TEXTOID}
};

static SavedStatement replace_effect_stmt = {
	"UPDATE idemgate.outbox"
	" SET effect_id = $2, replaces = $1, payload = $3,"
	"     state = 'pending', attempts = 0, next_attempt_at = pg_catalog.now(),"
	"     lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, provider_id = NULL,"
	"     updated_at = pg_catalog.now()"
	" WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	3, {UUIDOID, UUIDOID, JSONBOID}
};

/*
 * LockEffectRow runs stmt, which locks the row of effect_id, and fills the
 * first columns every such statement returns (state, key, effect type)
 * into *effect; false when there is no such effect.
 */
static bool
LockEffectRow(SavedStatement *stmt, pg_uuid_t *effect_id, LockedEffect *effect)
{
	bool		isnull;

	if (!ExecSavedFind(stmt, UUIDPGetDatum(effect_id), "could not lock effect"))
		return false;
	effect->state = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	effect->key = DatumGetTextPCopy(GetResultDatum(0, 2, &isnull));
	effect->effect_type = TextDatumGetCString(GetResultDatum(0, 3, &isnull));
	return true;
}

/* LockEffect locks one effect's row for an operator; see outbox.h. */
bool
LockEffect(pg_uuid_t *effect_id, LockedEffect *effect)
{
	if (!LockEffectRow(&lock_effect_stmt, effect_id, effect))
		return false;
	effect->run_state = GetResultCString(0, 4);
	return true;
}

/* LockEffectWindow locks an effect and tells its cancel window; see outbox.h. */
bool
LockEffectWindow(pg_uuid_t *effect_id, LockedEffect *effect, bool *has_window,
				 bool *window_open, TimestampTz *cancel_until)
{
	bool		isnull;
	Datum		d;

	if (!LockEffectRow(&lock_effect_window_stmt, effect_id, effect))
		return false;
	effect->run_state = NULL;	/* not read */
	d = GetResultDatum(0, 4, &isnull);
	*has_window = !isnull;
	*cancel_until = isnull ? 0 : DatumGetTimestampTz(d);
	d = GetResultDatum(0, 5, &isnull);
	*window_open = !isnull && DatumGetBool(d);
	return true;
}

/* ExecEffectUpdate runs one of the single-effect updates below. */
static void
ExecEffectUpdate(SavedStatement *stmt, Datum *values, const char *nulls, const char *what)
{
	if (ExecSaved(stmt, values, nulls, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not %s effect", what);
}

/* CancelLockedEffect marks a locked effect cancelled; see outbox.h. */
void
CancelLockedEffect(pg_uuid_t *effect_id)
{
	Datum		value = UUIDPGetDatum(effect_id);

	ExecEffectUpdate(&cancel_effect_stmt, &value, NULL, "cancel");
}

/* RequeueLockedEffect makes a locked effect pending again; see outbox.h. */
void
RequeueLockedEffect(pg_uuid_t *effect_id)
{
	Datum		value = UUIDPGetDatum(effect_id);

	ExecEffectUpdate(&requeue_effect_stmt, &value, NULL, "requeue");
	WakeDispatcherAtCommit();
}

/* ReplaceLockedEffect; see outbox.h. Must be called inside SPI. */
pg_uuid_t *
ReplaceLockedEffect(pg_uuid_t *effect_id, text *key, Jsonb *payload)
{
	pg_uuid_t  *new_id = TimeOrderedUuid();
	Datum		values[3];

	/* On Citus an effect id carries its bucket (src/citus/distributed.c). */
	if (IdemgateIsDistributed())
		StampUuidBucket(new_id, KeyBucket(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
	values[0] = UUIDPGetDatum(effect_id);
	values[1] = UUIDPGetDatum(new_id);
	values[2] = JsonbPGetDatum(payload);
	ExecEffectUpdate(&replace_effect_stmt, values, NULL, "replace");
	WakeDispatcherAtCommit();
	return new_id;
}

/* ResolveLockedEffectDelivered marks a locked effect completed; see outbox.h. */
void
ResolveLockedEffectDelivered(pg_uuid_t *effect_id, const char *provider_id)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = UUIDPGetDatum(effect_id);
	SetTextParam(values, nulls, 1, provider_id);
	ExecEffectUpdate(&resolve_completed_stmt, values, nulls, "complete");
}
