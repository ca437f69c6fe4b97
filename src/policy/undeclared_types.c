/*-------------------------------------------------------------------------
 *
 * src/policy/undeclared_types.c
 *	  A misspelled effect type ("emial") used to be accepted silently: its
 *	  effects waited pending until stuck_effects named it 15 minutes later.
 *	  enqueue_effect and grant_effect_type now say so at once, in a NOTICE
 *	  that names the types something declares (README.md, "Effect types").
 *
 * Design note: a NOTICE, not an error. The contract stays open: an
 * operator may pull any type with claim_effects, a workflow may enqueue
 * before its endpoint is registered, and grant_effect_type is itself how a
 * pulled type is declared, so "declared nowhere" is a likely typo, not a
 * wrong call. A type is declared by an endpoint, a pull grant or an
 * effect policy. The check is one saved statement (the types' look-ups by
 * primary key) for types this backend has not yet seen declared: a type
 * found declared is remembered for the session (up to
 * IDEMGATE_DECLARED_TYPES_REMEMBERED), so a pooled n8n connection pays it
 * once per type, not per enqueue. The price: a type unregistered (or a
 * declaration rolled back) later in that session gets no NOTICE, which is
 * advice, not a control. The list of known types is read only when a
 * NOTICE is due. The stuck_effects alert still names a type nobody takes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "citus/statements.h"
#include "policy/undeclared_types.h"

/* IDEMGATE_DECLARED: a type named $ (text) is declared. */
#define IDEMGATE_DECLARED(t) \
	"(EXISTS (SELECT 1 FROM idemgate.endpoints e " \
	"WHERE e.effect_type OPERATOR(pg_catalog.=) " t ")" \
	" OR EXISTS (SELECT 1 FROM idemgate.effect_type_grants g " \
	"WHERE g.effect_type OPERATOR(pg_catalog.=) " t ")" \
	" OR EXISTS (SELECT 1 FROM idemgate.effect_type_policies p " \
	"WHERE p.effect_type OPERATOR(pg_catalog.=) " t "))"

static SavedStatement undeclared_stmt = {
	"SELECT t FROM pg_catalog.unnest($1) t WHERE NOT " IDEMGATE_DECLARED("t"),
	1, {TEXTARRAYOID}
};

static SavedStatement new_grant_type_stmt = {
	"SELECT NOT " IDEMGATE_DECLARED("$1")
	" AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o WHERE o.effect_type OPERATOR(pg_catalog.=) $1"
	"                 AND o.state OPERATOR(pg_catalog.=) 'pending')",
	1, {TEXTOID}
};

/* The first 20 declared types, for the NOTICE's detail. */
static SavedStatement known_types_stmt = {
	"SELECT pg_catalog.string_agg(t, ', ' ORDER BY t) FROM ("
	" SELECT effect_type AS t FROM idemgate.endpoints"
	" UNION SELECT effect_type FROM idemgate.effect_type_grants"
	" UNION SELECT effect_type FROM idemgate.effect_type_policies"
	" ORDER BY 1 LIMIT 20) k",
	0, {}
};

/*
 * DeclarationsInstalled: the tables that declare types exist (a schema
 * older than 1.1, the library already newer, has no grants or policies).
 */
static bool
DeclarationsInstalled(void)
{
	return OidIsValid(IdemgateRelid("effect_type_grants")) &&
		OidIsValid(IdemgateRelid("effect_type_policies"));
}

/* Types this backend found declared, in TopMemoryContext. */
#define IDEMGATE_DECLARED_TYPES_REMEMBERED 64
static char *declared[IDEMGATE_DECLARED_TYPES_REMEMBERED];
static int	n_declared = 0;

/* Remembered tells whether type (len bytes) was found declared before. */
static bool
Remembered(const char *type, int len)
{
	for (int i = 0; i < n_declared; i++)
		if ((int) strlen(declared[i]) == len && memcmp(declared[i], type, len) == 0)
			return true;
	return false;
}

/* Remember notes a type found declared, while there is room. */
static void
Remember(const char *type)
{
	if (n_declared < IDEMGATE_DECLARED_TYPES_REMEMBERED && !Remembered(type, strlen(type)))
		declared[n_declared++] = MemoryContextStrdup(TopMemoryContext, type);
}

/* KnownTypes: the declared types, comma-separated, or NULL when none. */
static char *
KnownTypes(void)
{
	bool		isnull;
	Datum		d;

	if (ExecSaved(&known_types_stmt, NULL, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	d = GetResultDatum(0, 1, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

/* Say: type is declared by nothing; known lists what is. */
static void
NoticeUndeclared(const char *type, const char *known, const char *where)
{
	ereport(NOTICE,
			(errmsg("%s: effect type \"%s\" is not declared: no endpoint, pull grant or effect "
					"policy names it",
					where, type),
			 known ? errdetail("Declared effect types: %s.", known) :
			 errdetail("No effect type is declared yet."),
			 errhint("If this is a misspelling, fix the workflow; its effects wait pending until "
					 "something takes them. Declare a pulled type with "
					 "idemgate.grant_effect_type(), an HTTP one with "
					 "idemgate.register_endpoint().")));
}

/* NoticeUndeclaredTypes: see undeclared_types.h. */
void
NoticeUndeclaredTypes(const ParsedEffect *parsed, int n)
{
	Datum	   *types;
	int			n_types = 0;
	Datum		arg;
	char	   *known;
	uint64		undeclared;
	char	  **names;

	/* Only the types not yet seen declared, each once. */
	types = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		repeated = false;

		for (int j = 0; j < i && !repeated; j++)
			repeated = parsed[j].type_len == parsed[i].type_len &&
				memcmp(parsed[j].type, parsed[i].type, parsed[i].type_len) == 0;
		if (!repeated && !Remembered(parsed[i].type, parsed[i].type_len))
			types[n_types++] = PointerGetDatum(cstring_to_text_with_len(parsed[i].type,
																		parsed[i].type_len));
	}
	if (n_types == 0 || !DeclarationsInstalled())
		return;
	arg = PointerGetDatum(construct_array(types, n_types, TEXTOID, -1, false, TYPALIGN_INT));
	ExecSavedExpect(&undeclared_stmt, &arg, NULL, true, 0, SPI_OK_SELECT,
					"could not look up effect types");
	/* Copy the names out before the next statement replaces SPI_tuptable. */
	undeclared = SPI_processed;
	names = palloc(sizeof(char *) * Max(undeclared, 1));
	for (uint64 r = 0; r < undeclared; r++)
	{
		bool		isnull;

		names[r] = TextDatumGetCString(GetResultDatum(r, 1, &isnull));
	}
	/* The others are declared: remembered. */
	for (int i = 0; i < n_types; i++)
	{
		char	   *t = TextDatumGetCString(types[i]);
		bool		missing = false;

		for (uint64 r = 0; r < undeclared && !missing; r++)
			missing = strcmp(names[r], t) == 0;
		if (!missing)
			Remember(t);
	}
	if (undeclared == 0)
		return;
	known = KnownTypes();
	for (uint64 r = 0; r < undeclared; r++)
		NoticeUndeclared(names[r], known, "enqueue_effect");
}

/* NoticeNewGrantType: see undeclared_types.h. */
void
NoticeNewGrantType(text *effect_type)
{
	Datum		arg = PointerGetDatum(effect_type);
	bool		isnull;

	if (!DeclarationsInstalled())
		return;
	if (!DatumGetBool(ExecSavedValue(&new_grant_type_stmt, &arg, NULL, true, SPI_OK_SELECT,
									 "could not look up effect type", &isnull)))
		return;
	{
		char	   *known = KnownTypes();

		ereport(NOTICE,
				(errmsg("grant_effect_type: effect type \"%s\" is new: no endpoint, policy, "
						"other grant or pending effect names it",
						text_to_cstring(effect_type)),
				 known ? errdetail("Declared effect types: %s.", known) :
				 errdetail("No effect type is declared yet."),
				 errhint("If this is a misspelling, revoke it with idemgate.revoke_effect_type() "
						 "and grant the right name.")));
	}
}
