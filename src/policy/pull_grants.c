/*-------------------------------------------------------------------------
 *
 * src/policy/pull_grants.c
 *	  grant_effect_type, revoke_effect_type and the pull-API rule (README.md, "Roles"):
 *	  a role may claim_effects, complete_effect or fail_effect an effect type
 *	  only when it was granted that type; a type with a registered endpoint
 *	  belongs to the dispatcher and only an operator may pull it. Anything
 *	  else is 42501 with a hint naming grant_effect_type.
 *
 * Who is an operator. Whoever may run grant_effect_type: the operator
 * bundle, superusers and the extension's owner, all through one ACL check,
 * so the rule follows grant_role / revoke_role without a second list.
 * The caller is the role in effect outside our SECURITY DEFINER functions
 * (GetOuterUserId), membership counts through role inheritance.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "ledger/events.h"
#include "core/pg_compat.h"
#include "policy/pull_grants.h"
#include "citus/statements.h"
#include "policy/undeclared_types.h"

PG_FUNCTION_INFO_V1(idemgate_grant_effect_type);
PG_FUNCTION_INFO_V1(idemgate_revoke_effect_type);

#define OPERATOR_PROBE "idemgate.grant_effect_type(regrole,text)"

static SavedStatement pull_rule_stmt = {
	"SELECT EXISTS (SELECT 1 FROM idemgate.endpoints e"
	"               WHERE e.effect_type OPERATOR(pg_catalog.=) $1),"
	"       EXISTS (SELECT 1 FROM idemgate.effect_type_grants g"
	"               WHERE g.effect_type OPERATOR(pg_catalog.=) $1"
	"                 AND pg_catalog.pg_has_role($2, g.role::pg_catalog.oid, 'USAGE'))",
	2, {TEXTOID, OIDOID}
};

static SavedStatement effect_type_stmt = {
	"SELECT effect_type FROM idemgate.outbox "
	"WHERE effect_id OPERATOR(pg_catalog.=) $1/*@bucket*//*@route $1*/",
	1, {UUIDOID}
};

static SavedStatement grant_stmt = {
	"INSERT INTO idemgate.effect_type_grants (role, effect_type, granted_by)"
	" VALUES ($1, $2, $3) ON CONFLICT (effect_type, role) DO NOTHING",
	3, {REGROLEOID, TEXTOID, TEXTOID}
};

static SavedStatement revoke_stmt = {
	"DELETE FROM idemgate.effect_type_grants"
	" WHERE role OPERATOR(pg_catalog.=) $1 AND effect_type OPERATOR(pg_catalog.=) $2",
	2, {REGROLEOID, TEXTOID}
};

/* CallerIsOperator tells whether role may run grant_effect_type. */
static bool
CallerIsOperator(Oid role)
{
	Oid			fn;

	if (superuser_arg(role))
		return true;
	fn = DatumGetObjectId(DirectFunctionCall1(to_regprocedure,
											  CStringGetTextDatum(OPERATOR_PROBE)));
	return OidIsValid(fn) && FunctionAclCheck(fn, role, ACL_EXECUTE) == ACLCHECK_OK;
}

/* PullRuleInstalled tells whether the 1.1 schema (the grants table) is there. */
static bool
PullRuleInstalled(void)
{
	Oid			nsp = get_namespace_oid("idemgate", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("effect_type_grants", nsp));
}

/* CheckPullAllowed applies the pull-API rule; see pull_grants.h. */
void
CheckPullAllowed(const char *effect_type)
{
	Oid			role = GetOuterUserId();
	Datum		values[2];
	bool		isnull;
	bool		has_endpoint;
	bool		granted;

	if (!PullRuleInstalled() || CallerIsOperator(role))
		return;
	values[0] = CStringGetTextDatum(effect_type);
	values[1] = ObjectIdGetDatum(role);
	has_endpoint = DatumGetBool(ExecSavedValue(&pull_rule_stmt, values, NULL, true, SPI_OK_SELECT,
											   "could not read the pull rights of effect type",
											   &isnull));
	granted = DatumGetBool(GetResultDatum(0, 2, &isnull));
	if (has_endpoint)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to pull effects of type \"%s\"",
						TruncateForMessage(effect_type)),
				 errdetail("The type has a registered endpoint: the dispatcher delivers it, "
						   "and only an operator may pull it."),
				 errhint("Pull a type without an endpoint, "
						 "granted with idemgate.grant_effect_type(role, effect_type), "
						 "or let the dispatcher deliver this one.")));
	if (!granted)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to pull effects of type \"%s\"",
						TruncateForMessage(effect_type)),
				 errdetail("Role \"%s\" was not granted this effect type.",
						   GetUserNameFromId(role, false)),
				 errhint("An operator grants it with idemgate.grant_effect_type(role, "
						 "effect_type).")));
}

/* CheckPullAllowedForEffect applies the rule to the type of an effect. */
void
CheckPullAllowedForEffect(pg_uuid_t *effect_id)
{
	Datum		values[1];
	bool		isnull;
	char	   *type;

	if (!PullRuleInstalled() || CallerIsOperator(GetOuterUserId()))
		return;
	values[0] = UUIDPGetDatum(effect_id);
	ExecSavedExpect(&effect_type_stmt, values, NULL, true, 1, SPI_OK_SELECT,
					"could not read the type of effect");
	if (SPI_processed == 0)
		return;					/* unknown effect: the caller reports a lost lease */
	type = TextDatumGetCString(GetResultDatum(0, 1, &isnull));
	CheckPullAllowed(type);
}

/* GrantArgs reads and checks (role, effect_type). */
static void
GrantArgs(FunctionCallInfo fcinfo, Oid *role, text **effect_type)
{
	RequireArg(fcinfo, 0, "role");
	*role = PG_GETARG_OID(0);
	if (GetUserNameFromId(*role, true) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"role\" must name an existing role, not OID %u", *role)));
	*effect_type = TextArg(fcinfo, 1, "effect_type", 200);
}

/* RecordGrantEvent audits a grant or revoke of an effect type. */
static void
RecordGrantEvent(const char *kind, Oid role, text *effect_type)
{
	EventDetails details;

	DetailsInit(&details);
	DetailsText(&details, "role", GetUserNameFromId(role, false));
	DetailsText(&details, "effect_type", text_to_cstring(effect_type));
	RecordEvent(NULL, NULL, kind, GetUserNameFromId(GetSessionUserId(), false),
				DetailsFinish(&details));
}

/* idemgate_grant_effect_type implements grant_effect_type(role, effect_type). */
Datum
idemgate_grant_effect_type(PG_FUNCTION_ARGS)
{
	Oid			role;
	text	   *effect_type;
	Datum		values[3];

	GrantArgs(fcinfo, &role, &effect_type);
	ConnectSPI();
	values[0] = ObjectIdGetDatum(role);
	values[1] = PointerGetDatum(effect_type);
	values[2] = CStringGetTextDatum(GetUserNameFromId(GetSessionUserId(), false));
	NoticeNewGrantType(effect_type);
	ExecSavedExpect(&grant_stmt, values, NULL, false, 0, SPI_OK_INSERT,
					"could not record effect type grant");
	if (SPI_processed > 0)
		RecordGrantEvent("effect_type_granted", role, effect_type);
	SPI_finish();
	PG_RETURN_VOID();
}

/* idemgate_revoke_effect_type implements revoke_effect_type(role, effect_type). */
Datum
idemgate_revoke_effect_type(PG_FUNCTION_ARGS)
{
	Oid			role;
	text	   *effect_type;
	Datum		values[2];
	bool		found;

	GrantArgs(fcinfo, &role, &effect_type);
	ConnectSPI();
	values[0] = ObjectIdGetDatum(role);
	values[1] = PointerGetDatum(effect_type);
	ExecSavedExpect(&revoke_stmt, values, NULL, false, 0, SPI_OK_DELETE,
					"could not remove effect type grant");
	found = SPI_processed > 0;
	if (found)
		RecordGrantEvent("effect_type_revoked", role, effect_type);
	SPI_finish();
	PG_RETURN_BOOL(found);
}
