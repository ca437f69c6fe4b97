/*-------------------------------------------------------------------------
 *
 * src/policy/effect_types.c
 *	  Operating effects per type: pause_effect_type, resume_effect_type,
 *	  EffectTypePaused() for the claim paths, and the reserved types.
 *
 * Design note. A type is paused while it has a row in
 * idemgate.paused_effect_types. Like the kill switch, a pause holds effects
 * at the effect boundary: claim_effects returns nothing for a paused type
 * and the dispatcher's claim statement skips paused types, so queued
 * effects stay pending (not lost) and go out after resume. Pausing and
 * resuming are audited (events effect_type_paused / effect_type_resumed
 * with actor, reason and the previous state). A type is "known" when it has effects, an
 * endpoint or a pause; pausing or resuming an unknown one is IG003 (a
 * misspelled type would otherwise be paused silently).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "core/args.h"
#include "core/dispatcher_wake.h"
#include "policy/effect_types.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_pause_effect_type);
PG_FUNCTION_INFO_V1(idemgate_resume_effect_type);

#define MAX_TYPE_BYTES IDEMGATE_MAX_NAME_BYTES
#define MAX_ACTOR_BYTES IDEMGATE_MAX_NAME_BYTES
#define MAX_REASON_BYTES IDEMGATE_MAX_REASON_BYTES

static SavedStatement paused_stmt = {
	"SELECT 1 FROM idemgate.paused_effect_types"
	" WHERE effect_type OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static SavedStatement known_type_stmt = {
	"SELECT EXISTS (SELECT 1 FROM idemgate.outbox WHERE effect_type OPERATOR(pg_catalog.=) $1)"
	"    OR EXISTS (SELECT 1 FROM idemgate.endpoints WHERE effect_type OPERATOR(pg_catalog.=) $1)"
	"    OR EXISTS (SELECT 1 FROM idemgate.paused_effect_types"
	"               WHERE effect_type OPERATOR(pg_catalog.=) $1)",
	1, {TEXTOID}
};

static SavedStatement pause_stmt = {
	"INSERT INTO idemgate.paused_effect_types AS p (effect_type, paused_by, reason)"
	" VALUES ($1, $2, $3)"
	" ON CONFLICT (effect_type) DO UPDATE"
	" SET paused_by = excluded.paused_by, reason = excluded.reason"
	" RETURNING (xmax OPERATOR(pg_catalog.<>) 0) AS was_paused",
	3, {TEXTOID, TEXTOID, TEXTOID}
};

static SavedStatement resume_stmt = {
	"DELETE FROM idemgate.paused_effect_types WHERE effect_type OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * EffectTypePaused reads the pause table; see effect_types.h. A database
 * still at 1.0 (this library installed, ALTER EXTENSION UPDATE not run yet)
 * has no pause table, so nothing there can be paused: the pull API keeps
 * working through the upgrade window.
 */
bool
EffectTypePaused(const char *effect_type)
{
	Datum		values[1];
	Oid			nsp = get_namespace_oid("idemgate", true);

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("paused_effect_types", nsp)))
		return false;
	values[0] = CStringGetTextDatum(effect_type);
	ExecSavedExpect(&paused_stmt, values, NULL, false, 1, SPI_OK_SELECT,
					"could not read idemgate.paused_effect_types");
	return SPI_processed > 0;
}

/* RequireKnownType raises IG003 unless the type has effects, an endpoint or a pause. */
static void
RequireKnownType(text *effect_type)
{
	Datum		values[1];
	bool		isnull;

	values[0] = PointerGetDatum(effect_type);
	if (!DatumGetBool(ExecSavedValue(&known_type_stmt, values, NULL, false, SPI_OK_SELECT,
									 "could not look up effect type", &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect type \"%s\" is unknown",
						TruncateForMessage(text_to_cstring(effect_type))),
				 errdetail("No effect, endpoint or pause has this type."),
				 errhint("See idemgate.effect_types for the types in use.")));
}

/*
 * idemgate_pause_effect_type implements pause_effect_type(effect_type,
 * actor, reason): holds the type's effects until resume_effect_type.
 * Pausing a paused type updates who and why.
 */
Datum
idemgate_pause_effect_type(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", MAX_TYPE_BYTES);
	text	   *actor = TextArg(fcinfo, 1, "actor", MAX_ACTOR_BYTES);
	text	   *reason = TextArg(fcinfo, 2, "reason", MAX_REASON_BYTES);
	Datum		values[3];
	bool		isnull;
	bool		was_paused;
	EventDetails details;

	ConnectSPI();
	RequireKnownType(effect_type);
	values[0] = PointerGetDatum(effect_type);
	values[1] = PointerGetDatum(actor);
	values[2] = PointerGetDatum(reason);
	was_paused = DatumGetBool(ExecSavedValue(&pause_stmt, values, NULL, false,
											 SPI_OK_INSERT_RETURNING,
											 "could not pause effect type", &isnull));

	DetailsInit(&details);
	DetailsBool(&details, "previous_paused", was_paused);
	DetailsText(&details, "reason", text_to_cstring(reason));
	RecordTypeEvent("effect_type_paused", text_to_cstring(actor), text_to_cstring(effect_type),
					"role", &details);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * idemgate_resume_effect_type implements resume_effect_type(effect_type,
 * actor): the held effects go out again. Resuming a type that is not
 * paused changes nothing but is still recorded.
 */
Datum
idemgate_resume_effect_type(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", MAX_TYPE_BYTES);
	text	   *actor = TextArg(fcinfo, 1, "actor", MAX_ACTOR_BYTES);
	bool		was_paused;
	EventDetails details;

	ConnectSPI();
	RequireKnownType(effect_type);
	was_paused = ExecSavedByKey(&resume_stmt, PointerGetDatum(effect_type), SPI_OK_DELETE,
								"could not resume effect type");

	DetailsInit(&details);
	DetailsBool(&details, "previous_paused", was_paused);
	RecordTypeEvent("effect_type_resumed", text_to_cstring(actor), text_to_cstring(effect_type),
					"role", &details);
	if (was_paused)
		WakeDispatcherAtCommit();	/* held effects may go out now */
	SPI_finish();
	PG_RETURN_VOID();
}


/* IsReservedEffectType tells whether type is idemgate's own; see effect_types.h. */
bool
IsReservedEffectType(const char *type)
{
	return strncmp(type, IDEMGATE_RESERVED_TYPE_PREFIX,
				   strlen(IDEMGATE_RESERVED_TYPE_PREFIX)) == 0;
}
