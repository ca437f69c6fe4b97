/*-------------------------------------------------------------------------
 *
 * src/policy/privileges.c
 *	  grant_role and revoke_role: rights come in bundles (client, approver,
 *	  operator, reader) listed in idemgate.bundle_members.
 *
 * GRANT and REVOKE cannot take parameters, so the statements are built from
 * catalog output only: the role name through quote_identifier and the
 * object names through regprocedure/regclass output, which qualify and
 * quote them. No caller text reaches the SQL. bundle_members.fn is text
 * (pg_upgrade refuses regprocedure columns), so the row trigger
 * bundle_members_canonical stores it as regprocedure output, computed with
 * the pinned search_path (schema-qualified), and rejects unknown functions.
 *
 * Tokens out of the server log. Approval tokens travel in the calls of the
 * approver bundle (peek_approval, consume_approval) and come back from the
 * client's request_approval; a tool that pastes parameters into the
 * statement text (n8n's Postgres node does) would otherwise put a token in
 * the log with any failing call (STATEMENT: ...), in an error's CONTEXT
 * (JSON data, line 1: ...), or with log_statement / slow-statement
 * logging. The functions that take a token keep it out of their own
 * error reports whoever calls them (their SET clauses, 1.3:
 * sql/1.2--1.3/80_token_quiet_calls.sql): role settings reach neither the
 * members of a group role nor anyone but the role they are set on. When a
 * superuser calls grant_role for client or approver it also sets the role
 * settings in token_quiet_settings below (ALTER ROLE ... SET, from the
 * role's next login; they also cover log_statement), and revoke_role
 * resets them when the role holds neither any more; for anyone else
 * grant_role sets none (they are superuser-only settings, and an operator
 * must not change what another role logs). The primary error message
 * still reaches the log: idemgate never puts a token in one.
 *
 * Whose bundles. grant_role and revoke_role run as the extension's owner,
 * so they check the caller (GetOuterUserId) themselves
 * (CheckRoleManageable): a reserved pg_* role is refused to everyone; a
 * superuser, or a role with CREATEROLE, BYPASSRLS or REPLICATION that the
 * caller lacks, to anyone but a superuser.
 *
 * Concurrency. Two GRANTs or REVOKEs on one object update the same catalog
 * row: run at once they fail with "tuple concurrently updated" (XX000) or
 * deadlock on each other's rows. Both functions therefore first take
 * granted_bundles in SHARE ROW EXCLUSIVE mode (self-conflicting, readers
 * not blocked) until the end of the transaction: calls run one after the
 * other, each seeing the catalog its predecessor committed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/args.h"
#include "citus/distributed.h"
#include "ledger/events.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_grant_role);
PG_FUNCTION_INFO_V1(idemgate_revoke_role);
PG_FUNCTION_INFO_V1(idemgate_bundle_members_canonical);

static SavedStatement serialise_stmt = {
	"LOCK TABLE idemgate.granted_bundles IN SHARE ROW EXCLUSIVE MODE",
	0, {InvalidOid}
};

static SavedStatement bundle_members_stmt = {
	"SELECT fn, rel::text, NULL::text FROM idemgate.bundle_members"
	" WHERE bundle = ANY ($1) ORDER BY 1, 2",
	1, {TEXTARRAYOID}
};

/*
 * 1.3: a relation member may name the columns the bundle reads (readers
 * read dead_letters without payload and error): "(a, b, c)", each quoted.
 */
static SavedStatement bundle_members_13_stmt = {
	"SELECT fn, rel::text,"
	"       '(' || (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ' ORDER BY n)"
	"                 FROM pg_catalog.unnest(columns) WITH ORDINALITY AS u(c, n)) || ')'"
	" FROM idemgate.bundle_members"
	" WHERE bundle = ANY ($1) ORDER BY 1, 2",
	1, {TEXTARRAYOID}
};

/* BundleColumnsInstalled: bundle_members has the columns column (1.3). */
static bool
BundleColumnsInstalled(void)
{
	Oid			rel = IdemgateRelid("bundle_members");

	return OidIsValid(rel) && get_attnum(rel, "columns") != InvalidAttrNumber;
}

static SavedStatement record_grant_stmt = {
	"INSERT INTO idemgate.granted_bundles (role, bundle, granted_by) VALUES ($1, $2, $3)"
	" ON CONFLICT (role, bundle) DO NOTHING",
	3, {REGROLEOID, TEXTOID, TEXTOID}
};

static SavedStatement forget_grant_stmt = {
	"DELETE FROM idemgate.granted_bundles WHERE role = $1 AND bundle = $2",
	2, {REGROLEOID, TEXTOID}
};

static SavedStatement remaining_bundles_stmt = {
	"SELECT pg_catalog.array_agg(bundle) FROM idemgate.granted_bundles WHERE role = $1",
	1, {REGROLEOID}
};

static SavedStatement holds_token_bundle_stmt = {
	"SELECT EXISTS (SELECT 1 FROM idemgate.granted_bundles WHERE role = $1"
	"               AND bundle = ANY ('{client,approver}'))",
	1, {REGROLEOID}
};

/* BundleArg returns a required bundle name, checked. */
static char *
BundleArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *bundle;

	RequireArg(fcinfo, argno, "bundle");
	bundle = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(bundle, "client") != 0 && strcmp(bundle, "approver") != 0 &&
		strcmp(bundle, "operator") != 0 && strcmp(bundle, "reader") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"bundle\" must be client, approver, "
						"operator or reader, not \"%s\"",
						bundle)));
	return bundle;
}

/*
 * ApplyBundles grants (or revokes) every member of the bundles in the text
 * array to (from) role.
 */
static void
ApplyBundles(Datum bundles, const char *role, bool grant)
{
	Datum		values[1];
	uint64		n;
	SPITupleTable *members;

	values[0] = bundles;
	if (ExecSaved(BundleColumnsInstalled() ? &bundle_members_13_stmt : &bundle_members_stmt,
				  values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read bundle members");
	n = SPI_processed;
	members = SPI_tuptable;
	for (uint64 i = 0; i < n; i++)
	{
		char	   *fn = SPI_getvalue(members->vals[i], members->tupdesc, 1);
		char	   *rel = SPI_getvalue(members->vals[i], members->tupdesc, 2);
		char	   *columns = SPI_getvalue(members->vals[i], members->tupdesc, 3);
		char	   *sql;

		if (fn != NULL)
			sql = psprintf(grant ? "GRANT EXECUTE ON FUNCTION %s TO %s" :
						   "REVOKE EXECUTE ON FUNCTION %s FROM %s", fn, role);
		else if (grant && columns != NULL)
			sql = psprintf("GRANT SELECT %s ON %s TO %s", columns, rel, role);
		else	/* a table's REVOKE takes its column privileges too */
			sql = psprintf(grant ? "GRANT SELECT ON %s TO %s" :
						   "REVOKE SELECT ON %s FROM %s", rel, role);
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not run \"%s\"", sql);
	}
	if (SPI_execute(psprintf(grant ? "GRANT USAGE ON SCHEMA idemgate TO %s" :
							 "REVOKE USAGE ON SCHEMA idemgate FROM %s", role),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not change schema usage");
}

/* Role settings that keep statement text and parameters out of the log. */
static const char *const token_quiet_settings[][2] = {
	{"log_min_error_statement", "panic"},
	{"log_error_verbosity", "terse"},
	{"log_statement", "none"},
	{"log_min_duration_statement", "-1"},
	{"log_parameter_max_length", "0"},
	{"log_parameter_max_length_on_error", "0"},
};

/*
 * SetTokenQuietSettings sets (quiet) or resets the settings above for
 * role (quoted). Only bundle names and fixed values reach the SQL.
 */
static void
SetTokenQuietSettings(const char *role, bool quiet)
{
	for (int i = 0; i < lengthof(token_quiet_settings); i++)
	{
		char	   *sql = quiet ?
			psprintf("ALTER ROLE %s SET %s = '%s'", role, token_quiet_settings[i][0],
					 token_quiet_settings[i][1]) :
			psprintf("ALTER ROLE %s RESET %s", role, token_quiet_settings[i][0]);

		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not run \"%s\"", sql);
	}
}

/* HandlesTokens tells whether a bundle's calls carry approval tokens. */
static bool
HandlesTokens(const char *bundle)
{
	return strcmp(bundle, "client") == 0 || strcmp(bundle, "approver") == 0;
}

/* HoldsTokenBundle tells whether role still holds client or approver. */
static bool
HoldsTokenBundle(Oid roleid)
{
	Datum		value = ObjectIdGetDatum(roleid);
	bool		isnull;

	ExecSavedExpect(&holds_token_bundle_stmt, &value, NULL, false, 1, SPI_OK_SELECT,
					"could not read remaining bundles");
	return DatumGetBool(GetResultDatum(0, 1, &isnull));
}

/* SingleBundle builds the one-element text array {bundle}. */
static Datum
SingleBundle(const char *bundle)
{
	Datum		elem = CStringGetTextDatum(bundle);

	return PointerGetDatum(construct_array(&elem, 1, TEXTOID, -1, false, TYPALIGN_INT));
}

/* RecordRoleEvent audits a grant or revoke. */
static void
RecordRoleEvent(const char *kind, const char *role, const char *bundle)
{
	EventDetails details;

	DetailsInit(&details);
	DetailsText(&details, "role", role);
	DetailsText(&details, "bundle", bundle);
	RecordEvent(NULL, NULL, kind, GetUserNameFromId(GetSessionUserId(), false),
				DetailsFinish(&details));
}

static void CheckRoleManageable(Oid roleid, const char *name);

/* RoleArg returns the quoted name of the role argument, which must exist. */
static const char *
RoleArg(FunctionCallInfo fcinfo, int argno, Oid *roleid)
{
	char	   *name;

	RequireArg(fcinfo, argno, "role");
	*roleid = PG_GETARG_OID(argno);
	name = GetUserNameFromId(*roleid, true);
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("argument \"role\" must name an existing role, not OID %u", *roleid)));
	CheckRoleManageable(*roleid, name);
	return quote_identifier(name);
}

/*
 * CheckRoleManageable refuses (42501) to hand bundles to, or take them
 * from, a role the caller could not manage itself: a reserved pg_* role;
 * unless the caller (the role that called, not this function's owner) is
 * a superuser, a superuser, or a role with CREATEROLE, BYPASSRLS or
 * REPLICATION that the caller lacks. grant_role runs as the extension's
 * owner, so without this an operator could change what a superuser's
 * session logs (SetTokenQuietSettings) or act on a role above its own.
 */
static void
CheckRoleManageable(Oid roleid, const char *name)
{
	Oid			caller = GetOuterUserId();
	HeapTuple	target;
	HeapTuple	mine;
	Form_pg_authid t;
	Form_pg_authid c;
	const char *why = NULL;

	if (strncmp(name, "pg_", 3) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" is reserved", name),
				 errhint("Grant bundles to your own roles, not to PostgreSQL's predefined ones.")));
	if (superuser_arg(caller))
		return;
	target = SearchSysCache1(AUTHOID, ObjectIdGetDatum(roleid));
	mine = SearchSysCache1(AUTHOID, ObjectIdGetDatum(caller));
	if (!HeapTupleIsValid(target) || !HeapTupleIsValid(mine))
		elog(ERROR, "cache lookup failed for role %u", HeapTupleIsValid(target) ? caller : roleid);
	t = (Form_pg_authid) GETSTRUCT(target);
	c = (Form_pg_authid) GETSTRUCT(mine);
	if (t->rolsuper)
		why = "it is a superuser";
	else if (t->rolcreaterole && !c->rolcreaterole)
		why = "it has CREATEROLE, which you do not";
	else if (t->rolbypassrls && !c->rolbypassrls)
		why = "it has BYPASSRLS, which you do not";
	else if (t->rolreplication && !c->rolreplication)
		why = "it has REPLICATION, which you do not";
	ReleaseSysCache(target);
	ReleaseSysCache(mine);
	if (why != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to manage the bundles of role \"%s\": %s", name, why),
				 errhint("A superuser grants bundles to such a role.")));
}

/*
 * SyncDistributedGrants: on Citus the shards and the workers get what the
 * role now holds on the coordinator (idemgate--1.1--1.2.sql, part 64_distributed_privileges).
 */
static void
SyncDistributedGrants(Oid roleid)
{
	Oid			argtypes[1] = {REGROLEOID};
	Datum		values[1];

	if (!IdemgateIsDistributed())
		return;
	values[0] = ObjectIdGetDatum(roleid);
	if (SPI_execute_with_args("SELECT idemgate.distributed_sync_grants($1)", 1, argtypes,
							  values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not give the shards the role's grants");
}

/* SerialiseGrants waits for other grant_role / revoke_role calls to commit. */
static void
SerialiseGrants(void)
{
	ExecSavedExpect(&serialise_stmt, NULL, NULL, false, 0, SPI_OK_UTILITY,
					"could not lock idemgate.granted_bundles");
}

/* idemgate_grant_role implements grant_role(role, bundle). */
Datum
idemgate_grant_role(PG_FUNCTION_ARGS)
{
	Oid			roleid;
	char	   *bundle;
	const char *role;
	Datum		values[3];

	role = RoleArg(fcinfo, 0, &roleid);
	bundle = BundleArg(fcinfo, 1);

	ConnectSPI();
	SerialiseGrants();
	ApplyBundles(SingleBundle(bundle), role, true);
	/* Only a superuser may set them (the calls keep tokens out anyway). */
	if (HandlesTokens(bundle) && superuser_arg(GetOuterUserId()))
		SetTokenQuietSettings(role, true);
	values[0] = ObjectIdGetDatum(roleid);
	values[1] = CStringGetTextDatum(bundle);
	values[2] = CStringGetTextDatum(GetUserNameFromId(GetSessionUserId(), false));
	ExecSavedExpect(&record_grant_stmt, values, NULL, false, 0, SPI_OK_INSERT,
					"could not record grant");
	SyncDistributedGrants(roleid);
	RecordRoleEvent("role_granted", GetUserNameFromId(roleid, false), bundle);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * idemgate_revoke_role implements revoke_role(role, bundle). Rights the
 * role still needs for its other bundles are granted back, so revoking
 * client from an operator leaves the operator whole.
 */
Datum
idemgate_revoke_role(PG_FUNCTION_ARGS)
{
	Oid			roleid;
	char	   *bundle;
	const char *role;
	Datum		values[2];
	bool		isnull;
	Datum		remaining;

	role = RoleArg(fcinfo, 0, &roleid);
	bundle = BundleArg(fcinfo, 1);

	ConnectSPI();
	SerialiseGrants();
	values[0] = ObjectIdGetDatum(roleid);
	values[1] = CStringGetTextDatum(bundle);
	ExecSavedExpect(&forget_grant_stmt, values, NULL, false, 0, SPI_OK_DELETE,
					"could not forget grant");
	ApplyBundles(SingleBundle(bundle), role, false);

	ExecSavedExpect(&remaining_bundles_stmt, values, NULL, false, 1, SPI_OK_SELECT,
					"could not read remaining bundles");
	remaining = GetResultDatum(0, 1, &isnull);
	if (!isnull)
		ApplyBundles(remaining, role, true);
	if (HandlesTokens(bundle) && !HoldsTokenBundle(roleid) && superuser_arg(GetOuterUserId()))
		SetTokenQuietSettings(role, false);
	SyncDistributedGrants(roleid);
	RecordRoleEvent("role_revoked", GetUserNameFromId(roleid, false), bundle);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * idemgate_bundle_members_canonical is the BEFORE INSERT OR UPDATE row
 * trigger on idemgate.bundle_members: fn must name an existing function
 * (42883 otherwise) and is replaced by its regprocedure output. The
 * function pins search_path = pg_catalog, pg_temp, so the output is
 * schema-qualified and the same whoever inserts the row.
 */
Datum
idemgate_bundle_members_canonical(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	tupdesc;
	int			attno;
	bool		isnull;
	Datum		fn;
	Datum		canonical;
	bool		nulls = false;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		elog(ERROR, "idemgate_bundle_members_canonical must be a "
			 "BEFORE INSERT OR UPDATE row trigger");
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;
	tupdesc = RelationGetDescr(trigdata->tg_relation);
	attno = SPI_fnumber(tupdesc, "fn");
	if (attno <= 0 || TupleDescAttr(tupdesc, attno - 1)->atttypid != TEXTOID)
		elog(ERROR, "idemgate.bundle_members has no text column \"fn\"");
	fn = heap_getattr(tuple, attno, tupdesc, &isnull);
	if (isnull)
		return PointerGetDatum(tuple);
	canonical = DirectFunctionCall1(regprocedurein, CStringGetDatum(TextDatumGetCString(fn)));
	canonical = CStringGetTextDatum(DatumGetCString(DirectFunctionCall1(regprocedureout,
																		canonical)));
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, tupdesc, 1, &attno,
													 &canonical, &nulls));
}
