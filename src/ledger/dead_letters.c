/*-------------------------------------------------------------------------
 *
 * src/ledger/dead_letters.c
 *	  The dead_letters table: every statement that writes it. Runs,
 *	  approvals and the outbox record their failures here; the operator's
 *	  way back (src/operations/reinject.c) locks and marks letters through it.
 *
 * Design note. A dead letter is reinjected at most once: LockDeadLetter
 * locks its row (FOR UPDATE) and MarkDeadLetterReinjected sets
 * reinjected_at in the same transaction as the object it points to
 * changes, so two operators reinjecting one letter at once get true and
 * false.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "ledger/dead_letters.h"
#include "ledger/events.h"
#include "citus/statements.h"

static SavedStatement insert_dead_letter = {
	"INSERT INTO idemgate.dead_letters (kind, idempotency_key, effect_id, effect_type, "
	"payload, error_class, error, attempts/*@bucket_col*//*@id_col*/)/*@id_overriding*/"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8/*@bucket_val*//*@id_val*/) "
	"RETURNING id /*@route $2*/",
	8, {TEXTOID, TEXTOID, UUIDOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, INT4OID}
};

static SavedStatement target_stmt = {
	"UPDATE idemgate.dead_letters SET target = $2 "
	"WHERE id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	2, {INT8OID, TEXTOID}
};

static SavedStatement lock_letter_stmt = {
	"SELECT kind, idempotency_key, effect_id, reinjected_at IS NOT NULL, error_class"
	" FROM idemgate.dead_letters "
	"WHERE id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/ FOR UPDATE",
	1, {INT8OID}
};

static SavedStatement mark_letter_stmt = {
	"UPDATE idemgate.dead_letters SET reinjected_at = pg_catalog.now(), reinjected_by = $2"
	" WHERE id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	2, {INT8OID, TEXTOID}
};

static SavedStatement open_letters_stmt = {
	"SELECT id FROM idemgate.dead_letters"
	" WHERE reinjected_at IS NULL"
	"   AND ($1::text IS NULL OR (kind OPERATOR(pg_catalog.=) 'effect'"
	"                             AND effect_type OPERATOR(pg_catalog.=) $1))"
	"   AND ($2::timestamptz IS NULL OR dead_at OPERATOR(pg_catalog.>=) $2)"
	" ORDER BY id FOR UPDATE SKIP LOCKED",
	2, {TEXTOID, TIMESTAMPTZOID}
};

/*
 * RecordDeadLetter stores a failure with its full input and error, and
 * records a matching event. Returns the dead letter id.
 */
int64
RecordDeadLetter(const char *kind, text *key, pg_uuid_t *effect_id,
				 const char *effect_type, Jsonb *payload,
				 const char *error_class, const char *error, int attempts)
{
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int64		id;
	EventDetails details;

	values[0] = CStringGetTextDatum(kind);
	values[1] = PointerGetDatum(key);
	SetPointerParam(values, nulls, 2, effect_id);
	SetTextParam(values, nulls, 3, effect_type);
	SetPointerParam(values, nulls, 4, payload);
	SetTextParam(values, nulls, 5, error_class);
	SetTextParam(values, nulls, 6, error);
	values[7] = Int32GetDatum(attempts);

	id = DatumGetInt64(ExecSavedValue(&insert_dead_letter, values, nulls, false,
									  SPI_OK_INSERT_RETURNING, "could not record dead letter",
									  &isnull));

	DetailsInit(&details);
	DetailsInt(&details, "dead_letter_id", id);
	DetailsText(&details, "error_class", error_class);
	/* Not the error text: it names hosts and quotes provider bodies. */
	DetailsInt(&details, "attempts", attempts);
	RecordEvent(key, effect_id, "dead_lettered", NULL, DetailsFinish(&details));
	return id;
}

/* UpdateLetter runs stmt, an UPDATE of letter id ($1) with text ($2). */
static void
UpdateLetter(SavedStatement *stmt, int64 id, const char *text, const char *failure)
{
	Datum		values[2];

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(text);
	ExecSavedExpect(stmt, values, NULL, false, 0, SPI_OK_UPDATE, failure);
}

/* SetDeadLetterTarget keeps an effect letter's target beside its payload. */
void
SetDeadLetterTarget(int64 id, const char *target)
{
	UpdateLetter(&target_stmt, id, target, "could not record dead letter target");
}

/*
 * LockDeadLetter locks dead letter id and describes it in *letter; false
 * when it does not exist.
 */
bool
LockDeadLetter(int64 id, DeadLetterRef *letter)
{
	Datum		value = Int64GetDatum(id);
	bool		isnull;
	Datum		d;

	if (!ExecSavedFind(&lock_letter_stmt, value, "could not lock dead letter"))
		return false;
	letter->kind = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	letter->key = DatumGetTextPCopy(GetResultDatum(0, 2, &isnull));
	d = GetResultDatum(0, 3, &isnull);
	letter->effect_id = NULL;
	if (!isnull)
	{
		letter->effect_id = palloc(sizeof(pg_uuid_t));
		memcpy(letter->effect_id, DatumGetUUIDP(d), sizeof(pg_uuid_t));
	}
	letter->reinjected = DatumGetBool(GetResultDatum(0, 4, &isnull));
	letter->error_class = GetResultCString(0, 5);
	return true;
}

/* MarkDeadLetterReinjected records who reinjected a locked letter, and when. */
void
MarkDeadLetterReinjected(int64 id, const char *actor)
{
	UpdateLetter(&mark_letter_stmt, id, actor, "could not mark dead letter reinjected");
}

/*
 * LockOpenDeadLetters locks the open dead letters (only effect letters of
 * effect_type when not NULL; only those dead since since unless
 * since_null), skipping letters another session holds. Returns their ids,
 * oldest first, and their number in *n.
 */
int64 *
LockOpenDeadLetters(text *effect_type, Datum since, bool since_null, int *n)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int64	   *ids;

	SetPointerParam(values, nulls, 0, effect_type);
	values[1] = since_null ? (Datum) 0 : since;
	nulls[1] = since_null ? 'n' : ' ';
	ExecSavedExpect(&open_letters_stmt, values, nulls, false, 0, SPI_OK_SELECT,
					"could not list open dead letters");
	*n = (int) SPI_processed;
	ids = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(GetResultDatum(i, 1, &isnull));
	}
	return ids;
}
