/*-------------------------------------------------------------------------
 *
 * src/policy/endpoint_circuits.c
 *	  Endpoint health (SPEC §22): the only writer of
 *	  idemgate.endpoint_circuits, and reset_circuit.
 *
 * Design note. A provider that is down must not burn every queued
 * effect's attempts: after idemgate.circuit_failures retryable failures
 * of one endpoint in a row (transport, 429, 502-504, timeouts,
 * lost_after_send) its circuit opens, a row in endpoint_circuits. The
 * dispatcher's claim skips the type while the row exists, so its effects
 * stay pending with their attempts untouched. Once next_probe_at has
 * passed, one dispatcher (any node's: the row is a reference table on
 * Citus, and taking the probe is a compare-and-set on it) sends the
 * oldest due effect as the probe. A success, or any answer that is not a
 * circuit failure, closes the circuit and the backlog drains at the
 * endpoint's rate limit; a failure schedules the next probe after a
 * jittered backoff from 5 s to 5 min. While the circuit is open no
 * retryable failure dead-letters an effect (its last attempt waits for
 * the circuit instead); idemgate.circuit_max_hold bounds the wait.
 *
 * The count of failures in a row is kept in each dispatcher's memory: the
 * table is written only when a circuit opens, probes or closes (on Citus
 * each such write is a two-phase commit across the nodes). The set of
 * open circuits is read at most once a second.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "core/backoff.h"
#include "core/dispatcher_wake.h"
#include "policy/endpoint_circuits.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "citus/statements.h"
#include "core/sqlstates.h"

PG_FUNCTION_INFO_V1(idemgate_reset_circuit);

/* Types this process counts failures for at most (more: not counted). */
#define MAX_COUNTED_TYPES	256
/* How often the set of open circuits is read again. */
#define REFRESH_MS			1000

static SavedStatement refresh_stmt = {
	"SELECT effect_type, probes,"
	"       (next_probe_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"        AND (probe_owner IS NULL OR probe_until OPERATOR(pg_catalog.<) pg_catalog.now())),"
	"       pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) opened_at)"
	"  FROM idemgate.endpoint_circuits",
	0, {InvalidOid}
};

static SavedStatement open_stmt = {
	"INSERT INTO idemgate.endpoint_circuits"
	"   (effect_type, failures, error_class, last_status, next_probe_at)"
	" VALUES ($1, $2, $3, $4, pg_catalog.now() OPERATOR(pg_catalog.+) "
	"pg_catalog.make_interval(secs => $5))"
	" ON CONFLICT (effect_type) DO NOTHING RETURNING effect_type",
	5, {TEXTOID, INT4OID, TEXTOID, INT4OID, FLOAT8OID}
};

static SavedStatement take_probe_stmt = {
	"UPDATE idemgate.endpoint_circuits"
	"   SET probe_owner = $2,"
	"       probe_until = pg_catalog.now() OPERATOR(pg_catalog.+) "
	"pg_catalog.make_interval(secs => $3)"
	" WHERE effect_type OPERATOR(pg_catalog.=) $1"
	"   AND next_probe_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
	"   AND (probe_owner IS NULL OR probe_until OPERATOR(pg_catalog.<) pg_catalog.now())",
	3, {TEXTOID, UUIDOID, FLOAT8OID}
};

static SavedStatement probe_failed_stmt = {
	"UPDATE idemgate.endpoint_circuits"
	"   SET probes = probes OPERATOR(pg_catalog.+) 1, probe_owner = NULL, probe_until = NULL,"
	"       error_class = $3, last_status = $4,"
	"       next_probe_at = pg_catalog.now() OPERATOR(pg_catalog.+) "
	"pg_catalog.make_interval(secs => $5)"
	" WHERE effect_type OPERATOR(pg_catalog.=) $1 AND probe_owner OPERATOR(pg_catalog.=) $2"
	" RETURNING probes",
	5, {TEXTOID, UUIDOID, TEXTOID, INT4OID, FLOAT8OID}
};

static SavedStatement close_stmt = {
	"DELETE FROM idemgate.endpoint_circuits WHERE effect_type OPERATOR(pg_catalog.=) $1"
	" RETURNING opened_at, probes",
	1, {TEXTOID}
};

static SavedStatement endpoint_exists_stmt = {
	"SELECT 1 FROM idemgate.endpoints WHERE effect_type OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* One type's failures in a row, in this process. */
typedef struct TypeCount
{
	char	   *effect_type;
	int			in_a_row;
} TypeCount;

/* An open circuit, as last read. */
typedef struct OpenCircuit
{
	char	   *effect_type;
	int			probes;
	bool		probe_due;
	double		open_secs;		/* how long it had been open at the refresh */
} OpenCircuit;

static TypeCount counts[MAX_COUNTED_TYPES];
static int	n_counts = 0;
static OpenCircuit *open_circuits = NULL;
static int	n_open = 0;
static TimestampTz refreshed_at = 0;

/* CircuitsTableExists: a schema older than the library has no circuits. */
static bool
CircuitsTableExists(void)
{
	return OidIsValid(IdemgateRelid("endpoint_circuits"));
}

/* CircuitCountsFailure; see endpoint_circuits.h. */
bool
CircuitCountsFailure(const char *cls)
{
	return strcmp(cls, "transport") == 0 || strcmp(cls, "rate_limited") == 0 ||
		strcmp(cls, "unavailable") == 0 || strcmp(cls, "timeout_after_send") == 0 ||
		strcmp(cls, "lost_after_send") == 0;
}

/* CountOf finds (or, when create, makes) effect_type's count; NULL when full. */
static TypeCount *
CountOf(const char *effect_type, bool create)
{
	for (int i = 0; i < n_counts; i++)
		if (strcmp(counts[i].effect_type, effect_type) == 0)
			return &counts[i];
	if (!create || n_counts >= MAX_COUNTED_TYPES)
		return NULL;
	counts[n_counts].effect_type = MemoryContextStrdup(TopMemoryContext, effect_type);
	counts[n_counts].in_a_row = 0;
	return &counts[n_counts++];
}

/* CircuitsRefresh; see endpoint_circuits.h. */
void
CircuitsRefresh(bool force)
{
	TimestampTz now = GetCurrentTimestamp();
	OpenCircuit *fresh;
	uint64		n;

	if (!force && !TimestampDifferenceExceeds(refreshed_at, now, REFRESH_MS))
		return;
	refreshed_at = now;
	if (!CircuitsTableExists())
		n = 0;
	else
	{
		ExecSavedExpect(&refresh_stmt, NULL, NULL, true, 0, SPI_OK_SELECT,
						"could not read idemgate.endpoint_circuits");
		n = SPI_processed;
	}
	fresh = MemoryContextAllocZero(TopMemoryContext, sizeof(OpenCircuit) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		fresh[i].effect_type =
			MemoryContextStrdup(TopMemoryContext,
								TextDatumGetCString(GetResultDatum(i, 1, &isnull)));
		fresh[i].probes = DatumGetInt32(GetResultDatum(i, 2, &isnull));
		fresh[i].probe_due = DatumGetBool(GetResultDatum(i, 3, &isnull));
		fresh[i].open_secs = DatumGetFloat8(GetResultDatum(i, 4, &isnull));
	}
	for (int i = 0; i < n_open; i++)
		pfree(open_circuits[i].effect_type);
	if (open_circuits != NULL)
		pfree(open_circuits);
	open_circuits = fresh;
	n_open = (int) n;
}

/* CircuitKnownOpen; see endpoint_circuits.h. */
bool
CircuitKnownOpen(const char *effect_type)
{
	for (int i = 0; i < n_open; i++)
		if (strcmp(open_circuits[i].effect_type, effect_type) == 0)
			return true;
	return false;
}

/* CircuitNextProbe; see endpoint_circuits.h. */
const char *
CircuitNextProbe(int skip, int *probes)
{
	for (int i = 0; i < n_open; i++)
		if (open_circuits[i].probe_due && skip-- == 0)
		{
			*probes = open_circuits[i].probes;
			return open_circuits[i].effect_type;
		}
	return NULL;
}

/* CircuitOpenLongerThan; see endpoint_circuits.h. */
const char *
CircuitOpenLongerThan(int skip, int secs)
{
	for (int i = 0; i < n_open; i++)
		if (open_circuits[i].open_secs > secs && skip-- == 0)
			return open_circuits[i].effect_type;
	return NULL;
}

/* ForgetOpen drops effect_type from the circuits known open. */
static void
ForgetOpen(const char *effect_type)
{
	for (int i = 0; i < n_open; i++)
		if (strcmp(open_circuits[i].effect_type, effect_type) == 0)
		{
			pfree(open_circuits[i].effect_type);
			open_circuits[i] = open_circuits[--n_open];
			return;
		}
}

/* NoteOpen adds effect_type to the circuits known open (probe not due). */
static void
NoteOpen(const char *effect_type)
{
	if (CircuitKnownOpen(effect_type))
		return;
	open_circuits = open_circuits == NULL ?
		MemoryContextAlloc(TopMemoryContext, sizeof(OpenCircuit)) :
		repalloc(open_circuits, sizeof(OpenCircuit) * (n_open + 1));
	open_circuits[n_open].effect_type = MemoryContextStrdup(TopMemoryContext, effect_type);
	open_circuits[n_open].probes = 0;
	open_circuits[n_open].probe_due = false;
	open_circuits[n_open].open_secs = 0;
	n_open++;
}

/* CircuitTakeProbe; see endpoint_circuits.h. */
bool
CircuitTakeProbe(const char *effect_type, pg_uuid_t *owner, double until_secs)
{
	Datum		values[3];

	values[0] = CStringGetTextDatum(effect_type);
	values[1] = UUIDPGetDatum(owner);
	values[2] = Float8GetDatum(until_secs);
	ExecSavedExpect(&take_probe_stmt, values, NULL, false, 0, SPI_OK_UPDATE,
					"could not take the probe of a circuit");
	for (int i = 0; i < n_open; i++)
		if (strcmp(open_circuits[i].effect_type, effect_type) == 0)
			open_circuits[i].probe_due = false;	/* until the next refresh */
	return SPI_processed == 1;
}

/* CloseCircuit removes effect_type's circuit, recording why; false if none. */
static bool
CloseCircuit(const char *effect_type, const char *kind, const char *actor, const char *why)
{
	Datum		values[1];
	EventDetails details;
	bool		isnull;

	values[0] = CStringGetTextDatum(effect_type);
	ExecSavedExpect(&close_stmt, values, NULL, false, 0, SPI_OK_DELETE_RETURNING,
					"could not close a circuit");
	ForgetOpen(effect_type);
	if (SPI_processed == 0)
		return false;
	DetailsInit(&details);
	DetailsText(&details, "effect_type", effect_type);
	DetailsText(&details, "opened_at",
				DatumGetCString(DirectFunctionCall1(timestamptz_out,
													GetResultDatum(0, 1, &isnull))));
	DetailsInt(&details, "probes", DatumGetInt32(GetResultDatum(0, 2, &isnull)));
	DetailsText(&details, "by", why);
	RecordEvent(NULL, NULL, kind, actor, DetailsFinish(&details));
	return true;
}

/* CircuitNoteAnswer; see endpoint_circuits.h. */
void
CircuitNoteAnswer(const char *effect_type, bool probe, pg_uuid_t *owner)
{
	TypeCount  *c = CountOf(effect_type, false);

	if (c != NULL)
		c->in_a_row = 0;
	if ((probe || CircuitKnownOpen(effect_type)) && CircuitsTableExists() &&
		CloseCircuit(effect_type, "endpoint_circuit_closed", NULL, probe ? "probe" : "delivery"))
		ereport(LOG,
				(errmsg("idemgate dispatcher: the endpoint of effect type \"%s\" answered; "
						"its circuit is closed",
						effect_type)));
}

/* OpenCircuit opens effect_type's circuit; true when this call opened it. */
static bool
OpenTypeCircuit(const char *effect_type, int failures, const char *cls, int status)
{
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	EventDetails details;

	/* Not for a type whose endpoint is gone meanwhile (unregister_endpoint). */
	values[0] = CStringGetTextDatum(effect_type);
	if (ExecSaved(&endpoint_exists_stmt, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed == 0)
		return false;
	values[1] = Int32GetDatum(failures);
	values[2] = CStringGetTextDatum(cls);
	values[3] = Int32GetDatum(status);
	nulls[3] = status > 0 ? ' ' : 'n';
	values[4] = Float8GetDatum((double) ProbeBackoffUsecs(0) / USECS_PER_SEC);
	ExecSavedExpect(&open_stmt, values, nulls, false, 0, SPI_OK_INSERT_RETURNING,
					"could not open a circuit");
	NoteOpen(effect_type);
	if (SPI_processed == 0)
		return false;			/* another dispatcher opened it */
	DetailsInit(&details);
	DetailsText(&details, "effect_type", effect_type);
	DetailsInt(&details, "failures", failures);
	DetailsText(&details, "error_class", cls);
	if (status > 0)
		DetailsInt(&details, "status", status);
	RecordEvent(NULL, NULL, "endpoint_circuit_opened", NULL, DetailsFinish(&details));
	return true;
}

/* CircuitNoteFailure; see endpoint_circuits.h. */
bool
CircuitNoteFailure(const char *effect_type, const char *cls, int status, bool probe,
				   pg_uuid_t *owner)
{
	TypeCount  *c;

	if (IdemgateCircuitFailures <= 0 || !CircuitsTableExists())
		return false;
	if (probe)
	{
		Datum		values[5];
		char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
		int			probes = 0;

		for (int i = 0; i < n_open; i++)
			if (strcmp(open_circuits[i].effect_type, effect_type) == 0)
				probes = open_circuits[i].probes;
		values[0] = CStringGetTextDatum(effect_type);
		values[1] = UUIDPGetDatum(owner);
		values[2] = CStringGetTextDatum(cls);
		values[3] = Int32GetDatum(status);
		nulls[3] = status > 0 ? ' ' : 'n';
		values[4] = Float8GetDatum((double) ProbeBackoffUsecs(probes + 1) / USECS_PER_SEC);
		ExecSavedExpect(&probe_failed_stmt, values, nulls, false, 0, SPI_OK_UPDATE_RETURNING,
						"could not record a failed probe");
		if (SPI_processed == 1)
		{
			bool		isnull;
			int			done = DatumGetInt32(GetResultDatum(0, 1, &isnull));

			for (int i = 0; i < n_open; i++)
				if (strcmp(open_circuits[i].effect_type, effect_type) == 0)
					open_circuits[i].probes = done;
			return true;
		}
		/* reset_circuit meanwhile: counted as any failure below */
	}
	if (CircuitKnownOpen(effect_type))
		return true;
	c = CountOf(effect_type, true);
	if (c == NULL)
		return false;
	if (++c->in_a_row < IdemgateCircuitFailures)
		return false;
	if (OpenTypeCircuit(effect_type, c->in_a_row, cls, status))
		ereport(LOG,
				(errmsg("idemgate dispatcher: the endpoint of effect type \"%s\" failed %d times "
						"in a row (%s); its circuit is open",
						effect_type, c->in_a_row, cls),
				 errdetail("Its effects wait as pending, their attempts untouched; "
						   "a probe goes out after a backoff from 5 s to 5 min."),
				 errhint("The alert endpoint_down names it; idemgate.reset_circuit() "
						 "closes it by hand.")));
	c->in_a_row = 0;
	return CircuitKnownOpen(effect_type);
}

/* CircuitForget; see endpoint_circuits.h. */
void
CircuitForget(const char *effect_type)
{

	if (!CircuitsTableExists())
		return;
	ExecSavedByKey(&close_stmt, CStringGetTextDatum(effect_type), SPI_OK_DELETE_RETURNING,
				   "could not close a circuit");
}

/*
 * idemgate_reset_circuit implements reset_circuit(effect_type, actor):
 * closes the type's circuit by hand (its effects go out again at once);
 * true when it was open. Audited (event endpoint_circuit_reset) either
 * way; IG003 for a type without an endpoint.
 */
Datum
idemgate_reset_circuit(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", IDEMGATE_MAX_NAME_BYTES);
	text	   *actor = TextArg(fcinfo, 1, "actor", IDEMGATE_MAX_NAME_BYTES);
	char	   *type = text_to_cstring(effect_type);
	Datum		values[1];
	bool		was_open;

	ConnectSPI();
	values[0] = PointerGetDatum(effect_type);
	ExecSavedExpect(&endpoint_exists_stmt, values, NULL, false, 1, SPI_OK_SELECT,
					"could not look up the endpoint");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("effect type \"%s\" has no endpoint", TruncateForMessage(type)),
				 errhint("See idemgate.endpoint_health for the endpoints and their circuits.")));
	was_open = CloseCircuit(type, "endpoint_circuit_reset", text_to_cstring(actor),
							SessionRoleName());
	if (!was_open)
	{
		EventDetails details;

		DetailsInit(&details);
		DetailsBool(&details, "was_open", false);
		RecordTypeEvent("endpoint_circuit_reset", text_to_cstring(actor), type, "by", &details);
	}
	else
		WakeDispatcherAtCommit();	/* held effects may go out now */
	SPI_finish();
	PG_RETURN_BOOL(was_open);
}
