/*-------------------------------------------------------------------------
 *
 * src/ledger/events.c
 *	  Writes the audit trail. Callers are already inside SPI and inside the
 *	  transaction that changes the state, so the event commits or rolls
 *	  back with the change it describes. Dead letters: src/ledger/dead_letters.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "ledger/events.h"
#include "citus/statements.h"
#include "core/args.h"

static SavedStatement duplicate_event_stmt = {
	"INSERT INTO idemgate.events (idempotency_key, kind, actor, details/*@bucket_col*/)"
	" VALUES ($1, 'duplicate', $2, pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object("
	"   'workflow', $3::text, 'state', $4::text, 'version', $5::bigint, 'origin', "
	"$6::text))/*@bucket_val*/)"
	" /*@route $1*/",
	6, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID}
};

static SavedStatement insert_event = {
	"INSERT INTO idemgate.events (idempotency_key, effect_id, kind, actor, details/*@bucket_col*/) "
	"VALUES ($1, $2, $3, $4, $5/*@bucket_val*/) /*@route $1*/",
	5, {TEXTOID, UUIDOID, TEXTOID, TEXTOID, JSONBOID}
};


/* DetailsInit starts an empty details object. */
void
DetailsInit(EventDetails *d)
{
	initStringInfo(&d->buf);
	appendStringInfoChar(&d->buf, '{');
	d->empty = true;
}

/* DetailsKey appends the separator and a quoted key. */
static void
DetailsKey(EventDetails *d, const char *key)
{
	if (!d->empty)
		appendStringInfoString(&d->buf, ", ");
	d->empty = false;
	escape_json(&d->buf, key);
	appendStringInfoString(&d->buf, ": ");
}

/* DetailsText adds a string member; NULL values are skipped. */
void
DetailsText(EventDetails *d, const char *key, const char *value)
{
	if (value == NULL)
		return;
	DetailsKey(d, key);
	escape_json(&d->buf, value);
}

/* DetailsInt adds an integer member. */
void
DetailsInt(EventDetails *d, const char *key, int64 value)
{
	DetailsKey(d, key);
	appendStringInfo(&d->buf, INT64_FORMAT, value);
}

/* DetailsBool adds a boolean member. */
void
DetailsBool(EventDetails *d, const char *key, bool value)
{
	DetailsKey(d, key);
	appendStringInfoString(&d->buf, value ? "true" : "false");
}

/* DetailsJsonb adds a jsonb member; NULL values are skipped. */
void
DetailsJsonb(EventDetails *d, const char *key, Jsonb *value)
{
	if (value == NULL)
		return;
	DetailsKey(d, key);
	(void) JsonbToCString(&d->buf, &value->root, VARSIZE(value));
}

/* DetailsFinish closes the object and returns it as jsonb. */
Jsonb *
DetailsFinish(EventDetails *d)
{
	appendStringInfoChar(&d->buf, '}');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(d->buf.data)));
}

/* RecordEvent appends one row to the audit trail. */
void
RecordEvent(text *key, pg_uuid_t *effect_id, const char *kind,
			const char *actor, Jsonb *details)
{
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	SetPointerParam(values, nulls, 0, key);
	SetPointerParam(values, nulls, 1, effect_id);
	values[2] = CStringGetTextDatum(kind);
	SetTextParam(values, nulls, 3, actor);
	SetPointerParam(values, nulls, 4, details);

	if (ExecSaved(&insert_event, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record event \"%s\"", kind);
}

/*
 * RecordTypeEvent records kind, by actor, of an operator's call on one
 * effect type (pause, resume, unregister, a circuit's reset): the type and
 * the session's role under role_key, beside what details holds (NULL:
 * nothing more).
 */
void
RecordTypeEvent(const char *kind, const char *actor, const char *effect_type,
				const char *role_key, EventDetails *details)
{
	EventDetails none;

	if (details == NULL)
	{
		DetailsInit(&none);
		details = &none;
	}
	DetailsText(details, "effect_type", effect_type);
	DetailsText(details, role_key, SessionRoleName());
	RecordEvent(NULL, NULL, kind, actor, DetailsFinish(details));
}

/*
 * RecordDuplicateEvent records a claim answered duplicate: the run's
 * workflow (NULL when workflow_null), state and version, the duplicate
 * claim's origin (may be NULL) and the actor (may be NULL). The claim's
 * direct path writes the same row without SQL (src/ledger/claim_direct.c). Must
 * be called inside SPI.
 */
void
RecordDuplicateEvent(text *key, const char *actor, Datum workflow, bool workflow_null,
					 Datum state, int64 version, text *origin)
{
	Datum		dup[6];
	char		dupnulls[6] = {' ', 'n', ' ', ' ', ' ', ' '};

	dup[0] = PointerGetDatum(key);
	dup[1] = (Datum) 0;
	if (actor)
	{
		dup[1] = CStringGetTextDatum(actor);
		dupnulls[1] = ' ';
	}
	dup[2] = workflow;
	dupnulls[2] = workflow_null ? 'n' : ' ';
	dup[3] = state;
	dup[4] = Int64GetDatum(version);
	SetPointerParam(dup, dupnulls, 5, origin);
	ExecSavedExpect(&duplicate_event_stmt, dup, dupnulls, false, 0, SPI_OK_INSERT,
					"could not record duplicate claim");
}
