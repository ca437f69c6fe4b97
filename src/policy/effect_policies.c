/*-------------------------------------------------------------------------
 *
 * src/policy/effect_policies.c
 *	  Policy per effect type, enforced by the database ("prompts suggest,
 *	  nodes enforce"; README.md "Effect policies", docs/outbox.md):
 *	  set_effect_policy and the table idemgate.effect_type_policies it
 *	  writes, and the rules enqueue_effect (src/operations/enqueue.c) and
 *	  request_approval (src/approvals/approvals.c) read from it:
 *
 *	  requires_approval   enqueue_effect refuses the type (42501 naming the
 *	                      policy); only an approved request_approval puts
 *	                      it in the outbox.
 *	  requires_requester  request_approval for the type needs requested_by
 *	                      and a non-empty audience (22004 otherwise).
 *	  review_sample       that fraction of enqueue_effect calls with the
 *	                      type becomes an approval request instead (one
 *	                      draw from OpenSSL's CSPRNG per call);
 *	                      reviews_requested counts them.
 *	  cancel_window       automatic effects of the type are not due before
 *	                      the window ends; an approver may cancel them
 *	                      until then (cancel_in_window, src/operations/cancel.c).
 *
 * Design note: policy changes against calls in flight. A policy must bind
 * every call that commits after set_effect_policy commits, in every
 * isolation level, and neither side may wait on an idle transaction of the
 * other kind for longer than a commit takes (a forgotten n8n transaction
 * must not stop policy changes, nor every other workflow's enqueues behind
 * a waiting operator). So:
 *   - enqueue_effect and request_approval read the policies of their types
 *     in a snapshot taken now (ExecSavedLatest: REPEATABLE READ,
 *     SERIALIZABLE and imported snapshots see every committed policy, as
 *     foreign-key checks look past the transaction's snapshot), without a
 *     lock that set_effect_policy waits for, and remember what they read
 *     (types and their policies) for the transaction;
 *   - just before the transaction commits (a pre-commit callback) it takes
 *     ROW SHARE on the policy table and reads those types' policies again,
 *     in a snapshot taken then; a change since the first read is 40001
 *     (the transaction rolls back, nothing of it happens; a retry runs
 *     under the new policy). The lock is held for the rest of the commit
 *     only;
 *   - set_effect_policy takes EXCLUSIVE on the table before it writes, so
 *     it waits only for calls that are committing, and a commit that
 *     comes while a policy change is open waits for it and then sees it.
 * An enqueue left open across a policy change is refused at its commit;
 * one that committed before the change is as if it ran just before it.
 * On Citus (docs/citus.md) the read keeps 1.2's ROW SHARE lock held to the
 * end of the transaction instead (no statements in its commit protocol);
 * set_effect_policy then never queues for its EXCLUSIVE lock, so no
 * enqueue waits behind it: it tries without waiting every 10 ms, and after
 * lock_timeout (IDEMGATE_POLICY_LOCK_WAIT_MS when lock_timeout is 0) fails
 * with 55P03, naming how many transactions that enqueued are still open.
 * Weak table locks take PostgreSQL's fast path; while no policy was ever
 * set only a size look-up is paid (PoliciesMayExist).
 * test/specs/effect_policy_race.spec and effect_policy_snapshots.spec show
 * the orders.
 *
 * Lower than enqueue, approvals and cancel: it calls only the events and
 * SPI helpers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "core/args.h"
#include "core/crypto.h"
#include "citus/distributed.h"
#include "policy/effect_policies.h"
#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_set_effect_policy);

static SavedStatement read_stmt = {
	"SELECT effect_type, requires_approval, requires_requester, review_sample, cancel_window"
	" FROM idemgate.effect_type_policies"
	" WHERE effect_type OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}, GENERIC_PLAN
};

static SavedStatement count_review_stmt = {
	"UPDATE idemgate.effect_type_policies"
	" SET reviews_requested = reviews_requested OPERATOR(pg_catalog.+) 1"
	" WHERE effect_type OPERATOR(pg_catalog.=) ANY ($1)"
	"   AND review_sample OPERATOR(pg_catalog.>) 0",
	1, {TEXTARRAYOID}
};

/* Rows are never deleted: all defaults means no restriction. */
static SavedStatement upsert_stmt = {
	"INSERT INTO idemgate.effect_type_policies AS p (effect_type, requires_approval,"
	"  requires_requester, review_sample, cancel_window, updated_by)"
	" VALUES ($1, $2, $3, $4, $5, $6)"
	" ON CONFLICT (effect_type) DO UPDATE"
	" SET requires_approval = excluded.requires_approval,"
	"     requires_requester = excluded.requires_requester,"
	"     review_sample = excluded.review_sample, cancel_window = excluded.cancel_window,"
	"     updated_at = excluded.updated_at, updated_by = excluded.updated_by"
	" RETURNING (xmax OPERATOR(pg_catalog.=) 0) AS created",
	6, {TEXTOID, BOOLOID, BOOLOID, FLOAT4OID, INTERVALOID, TEXTOID}
};

/* PoliciesRelid returns the policy table's oid, InvalidOid before 1.2. */
static Oid
PoliciesRelid(void)
{
	return IdemgateRelid("effect_type_policies");
}

/*
 * PoliciesMayExist tells whether the locked policy table has a page at all.
 * Rows are never deleted (set_effect_policy keeps a lifted policy's row),
 * so an installation that never set a policy skips the read: one size
 * look-up instead of a statement on every enqueue_effect. A policy being
 * inserted extends the table before its commit, and the lock held waits
 * for that commit.
 */
static bool
PoliciesMayExist(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	bool		pages = RelationGetNumberOfBlocks(rel) > 0;

	relation_close(rel, NoLock);
	return pages;
}

/* TypesArray returns the distinct types of parsed[0..n) as a text[] datum. */
static Datum
TypesArray(const ParsedEffect *parsed, int n)
{
	Datum	   *types = palloc(sizeof(Datum) * n);
	int			ntypes = 0;

	for (int i = 0; i < n; i++)
	{
		bool		seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = parsed[j].type_len == parsed[i].type_len &&
				memcmp(parsed[j].type, parsed[i].type, parsed[i].type_len) == 0;
		if (!seen)
			types[ntypes++] = PointerGetDatum(cstring_to_text_with_len(parsed[i].type,
																	   parsed[i].type_len));
	}
	return PointerGetDatum(construct_array(types, ntypes, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * What this transaction read of the policies, to check again at its commit
 * (see the design note): the types asked about and the policies found, as
 * text. In TopTransactionContext; NULL when nothing was read.
 */
typedef struct PoliciesRead
{
	Datum		types;			/* text[] */
	char	   *signature;
	struct PoliciesRead *next;
} PoliciesRead;

static PoliciesRead *policies_read = NULL;
static bool policy_callback_registered = false;

/*
 * PoliciesSignature renders the rows read_stmt just returned (SPI_tuptable)
 * in the order of their types, so two reads of the same policies compare
 * equal.
 */
static char *
PoliciesSignature(void)
{
	StringInfoData buf;
	char	  **rows = palloc(sizeof(char *) * (SPI_processed + 1));

	initStringInfo(&buf);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		StringInfoData row;

		initStringInfo(&row);
		for (int c = 1; c <= 5; c++)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, c);

			appendStringInfo(&row, "%s\x1f", v ? v : "\x1e");
		}
		rows[r] = row.data;
	}
	qsort(rows, SPI_processed, sizeof(char *), pg_qsort_strcmp);
	for (uint64 r = 0; r < SPI_processed; r++)
		appendStringInfo(&buf, "%s\n", rows[r]);
	return buf.data;
}

/* CheckPoliciesUnchanged reads the remembered types again; see the note. */
static void
CheckPoliciesUnchanged(void)
{
	Oid			relid = PoliciesRelid();
	PoliciesRead *p;

	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tuple;
	Oid			owner;

	if (!OidIsValid(relid))
		return;
	LockRelationOid(relid, RowShareLock);
	/*
	 * The commit runs as the caller, not as the function that read the
	 * policy: read it again as the table's owner, as that function did.
	 */
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (p = policies_read; p != NULL; p = p->next)
	{
		char	   *now;

		if (!PoliciesMayExist(relid))
			now = "";
		else
		{
			if (ExecSavedLatest(&read_stmt, &p->types, NULL, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not read effect policies");
			now = PoliciesSignature();
		}
		if (strcmp(now, p->signature) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("an effect policy of this transaction's effects changed before "
							"it committed"),
					 errdetail("set_effect_policy committed after this transaction read the "
							   "policy; nothing of it was kept."),
					 errhint("Retry the transaction: it runs under the new policy.")));
	}
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/* PolicyXactCallback checks before commit, and forgets at the end. */
static void
PolicyXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* An error here aborts the transaction (XACT_EVENT_ABORT). */
			if (policies_read != NULL)
				CheckPoliciesUnchanged();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			policies_read = NULL;	/* its memory went with the transaction */
			break;
		default:
			break;
	}
}

/* RememberPolicies notes a read for the check at commit (single node). */
static void
RememberPolicies(Datum types, const char *signature)
{
	MemoryContext old;
	PoliciesRead *p;

	if (IdemgateIsDistributed())
		return;
	if (!policy_callback_registered)
	{
		RegisterXactCallback(PolicyXactCallback, NULL);
		policy_callback_registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	p = palloc(sizeof(PoliciesRead));
	p->types = PointerGetDatum(DatumGetArrayTypePCopy(types));
	p->signature = pstrdup(signature);
	p->next = policies_read;
	policies_read = p;
	MemoryContextSwitchTo(old);
}

/*
 * LockPoliciesWithoutQueueing takes EXCLUSIVE on the policy table (Citus:
 * see the design note) without ever waiting in its lock queue, where every
 * later enqueue would wait behind it.
 */
static void
LockPoliciesWithoutQueueing(Oid relid)
{
	int			bound_ms = LockTimeout > 0 ? LockTimeout : IDEMGATE_POLICY_LOCK_WAIT_MS;
	TimestampTz start = GetCurrentTimestamp();
	LOCKTAG		tag;
	int			holders = 0;

	while (!ConditionalLockRelationOid(relid, ExclusiveLock))
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), bound_ms))
		{
			VirtualTransactionId *v;

			SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
			v = GetLockConflicts(&tag, ExclusiveLock, NULL);
			while (VirtualTransactionIdIsValid(v[holders]))
				holders++;
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not change the effect policy: %d transaction(s) that enqueued "
							"effects are still open",
							holders),
					 errdetail("On Citus a policy change waits for every open transaction that "
							   "read a policy, at most lock_timeout (%d ms here), and never makes "
							   "other enqueues wait behind it.",
							   bound_ms),
					 errhint("Find them with SELECT pid, state, xact_start FROM pg_stat_activity "
							 "WHERE pid IN (SELECT pid FROM pg_locks "
							 "WHERE relation = 'idemgate.effect_type_policies'::regclass); end or "
							 "terminate them, then try again.")));
		}
		CHECK_FOR_INTERRUPTS();
		pg_usleep(IDEMGATE_POLICY_LOCK_STEP_MS * 1000L);
	}
}

/* ReadEffectPolicies reads the policies of a call's types; see effect_policies.h. */
void
ReadEffectPolicies(const ParsedEffect *parsed, int n, EffectPolicies *out)
{
	Oid			relid = PoliciesRelid();
	Datum		types;
	MemoryContext cxt = CurrentMemoryContext;

	out->n = 0;
	out->items = NULL;
	if (!OidIsValid(relid) || n == 0)
		return;
	types = TypesArray(parsed, n);
	/* See the design note. */
	if (IdemgateIsDistributed())
		LockRelationOid(relid, RowShareLock);
	else
		LockRelationOid(relid, AccessShareLock);
	if (!PoliciesMayExist(relid))
	{
		RememberPolicies(types, "");
		return;
	}
	if (ExecSavedLatest(&read_stmt, &types, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read effect policies");
	RememberPolicies(types, PoliciesSignature());
	if (SPI_processed == 0)
		return;
	out->items = MemoryContextAllocZero(cxt, sizeof(EffectPolicy) * SPI_processed);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		EffectPolicy *p = &out->items[out->n++];
		bool		isnull;
		Datum		d;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		p->effect_type = TextDatumGetCString(GetResultDatum(r, 1, &isnull));
		p->requires_approval = DatumGetBool(GetResultDatum(r, 2, &isnull));
		p->requires_requester = DatumGetBool(GetResultDatum(r, 3, &isnull));
		p->review_sample = DatumGetFloat4(GetResultDatum(r, 4, &isnull));
		d = GetResultDatum(r, 5, &isnull);
		if (!isnull)
		{
			p->cancel_window = palloc(sizeof(Interval));
			memcpy(p->cancel_window, DatumGetIntervalP(d), sizeof(Interval));
		}
		MemoryContextSwitchTo(old);
	}
}

/* FindEffectPolicy returns the policy of type, or NULL; see effect_policies.h. */
const EffectPolicy *
FindEffectPolicy(const EffectPolicies *policies, const char *type)
{
	for (int i = 0; i < policies->n; i++)
		if (strcmp(policies->items[i].effect_type, type) == 0)
			return &policies->items[i];
	return NULL;
}

/* RefuseTypesRequiringApproval applies requires_approval; see effect_policies.h. */
void
RefuseTypesRequiringApproval(const EffectPolicies *policies)
{
	for (int i = 0; i < policies->n; i++)
		if (policies->items[i].requires_approval)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("effect type \"%s\" requires approval (effect policy "
							"requires_approval); enqueue_effect may not send it",
							TruncateForMessage(policies->items[i].effect_type)),
					 errdetail("Only an approved request_approval puts effects of this type "
							   "in the outbox."),
					 errhint("Call idemgate.request_approval() for this run; an operator sets the "
							 "policy with idemgate.set_effect_policy().")));
}

/* DrawReview decides whether a call becomes a review; see effect_policies.h. */
bool
DrawReview(const EffectPolicies *policies, double *sample)
{
	double		p = 0;
	uint64		r;
	double		u;

	for (int i = 0; i < policies->n; i++)
		p = Max(p, policies->items[i].review_sample);
	*sample = p;
	if (p <= 0)
		return false;
	/* 53 random bits: u is uniform in [0, 1), so p = 1 always reviews. */
	RandomBytes((uint8 *) &r, sizeof(r));
	u = (double) (r >> 11) * (1.0 / 9007199254740992.0);
	return u < p;
}

/* CountReviewRequested counts a sampled review; see effect_policies.h. */
void
CountReviewRequested(const EffectPolicies *policies)
{
	Datum	   *types;
	Datum		arr;
	int			ntypes = 0;

	types = palloc(sizeof(Datum) * Max(policies->n, 1));
	for (int i = 0; i < policies->n; i++)
		if (policies->items[i].review_sample > 0)
			types[ntypes++] = CStringGetTextDatum(policies->items[i].effect_type);
	if (ntypes == 0)
		return;
	arr = PointerGetDatum(construct_array(types, ntypes, TEXTOID, -1, false, TYPALIGN_INT));
	ExecSavedExpect(&count_review_stmt, &arr, NULL, false, 0, SPI_OK_UPDATE,
					"could not count the review");
}

/* ApplyCancelWindows holds automatic effects for their window; see effect_policies.h. */
void
ApplyCancelWindows(const EffectPolicies *policies, ParsedEffect *parsed, int n)
{
	for (int i = 0; i < n; i++)
	{
		const EffectPolicy *p = FindEffectPolicy(policies, parsed[i].type);
		TimestampTz window_end;

		if (p == NULL || p->cancel_window == NULL)
			continue;
		/* now() + the window, as SQL would compute it (the transaction's start). */
		window_end = DatumGetTimestampTz(
			DirectFunctionCall2(timestamptz_pl_interval,
								TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
								IntervalPGetDatum(p->cancel_window)));
		if (!parsed[i].has_not_before || parsed[i].not_before < window_end)
			parsed[i].not_before = window_end;
		parsed[i].has_not_before = true;
		parsed[i].cancel_window = true;
	}
}

/* CheckRequesterPolicy applies requires_requester; see effect_policies.h. */
void
CheckRequesterPolicy(const ParsedEffect *parsed, int n, const char *requested_by,
					 int audience_count)
{
	EffectPolicies policies;

	ReadEffectPolicies(parsed, n, &policies);
	for (int i = 0; i < policies.n; i++)
	{
		const char *type = policies.items[i].effect_type;

		if (!policies.items[i].requires_requester)
			continue;
		if (requested_by == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"requested_by\" must not be NULL: effect type \"%s\" "
							"requires a requester (effect policy requires_requester)",
							TruncateForMessage(type)),
					 errhint("Name who asks (e.g. the workflow) in requested_by and the approvers "
							 "in audience.")));
		if (audience_count < 1)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"audience\" must name at least one approver: "
							"effect type \"%s\" requires a requester and an audience (effect "
							"policy requires_requester)",
							TruncateForMessage(type)),
					 errhint("List the approvers' subjects in audience.")));
	}
}

/* JsonbNumberText returns a jsonb number written as text. */
static Jsonb *
JsonbNumberText(const char *text)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/*
 * idemgate_set_effect_policy implements set_effect_policy(effect_type,
 * requires_approval, requires_requester, review_sample, cancel_window,
 * actor): creates or replaces the policy of one effect type, audited with
 * an effect_policy_set event.
 */
Datum
idemgate_set_effect_policy(PG_FUNCTION_ARGS)
{
	text	   *effect_type = TextArg(fcinfo, 0, "effect_type", IDEMGATE_MAX_NAME_BYTES);
	char	   *type_str = text_to_cstring(effect_type);
	bool		requires_approval;
	bool		requires_requester;
	float4		review_sample;
	Interval   *cancel_window = NULL;
	char	   *actor;
	Oid			relid;
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	bool		created;
	EventDetails details;

	requires_approval = REQUIRED_ARG(1, "requires_approval", BOOL);
	requires_requester = REQUIRED_ARG(2, "requires_requester", BOOL);
	review_sample = REQUIRED_ARG(3, "review_sample", FLOAT4);
	if (isnan(review_sample) || review_sample < 0 || review_sample > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"review_sample\" must be between 0 and 1, not %g",
						review_sample),
				 errhint("0 reviews no automatic call, 0.05 one in twenty, 1 every one.")));
	if (!PG_ARGISNULL(4))
		cancel_window = IntervalArg(fcinfo, 4, "cancel_window", 0, IDEMGATE_MAX_CANCEL_WINDOW_USECS,
									"Pass NULL for no cancel window.");
	if (PG_ARGISNULL(5))
		actor = GetUserNameFromId(GetOuterUserId(), false);
	else
		actor = text_to_cstring(TextArg(fcinfo, 5, "actor", IDEMGATE_MAX_NAME_BYTES));

	if (IsReservedEffectType(type_str))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("effect type \"%s\" is reserved", TruncateForMessage(type_str)),
				 errdetail("Effect types beginning with \"" IDEMGATE_RESERVED_TYPE_PREFIX "\" are "
						   "idemgate's own: no caller enqueues them.")));
	if (requires_approval && review_sample > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"review_sample\" must be 0 when requires_approval is true"),
				 errdetail("review_sample samples automatic enqueue_effect calls, "
						   "and requires_approval allows none.")));
	if (requires_approval && cancel_window != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"cancel_window\" must be NULL when requires_approval is true"),
				 errdetail("cancel_window holds automatic effects, and requires_approval "
						   "allows none.")));
	if (requires_requester && review_sample > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"review_sample\" must be 0 when requires_requester is true"),
				 errdetail("A review that enqueue_effect requests has no requester and "
						   "no audience."),
				 errhint("Have the workflow call idemgate.request_approval() with requested_by and "
						 "audience instead.")));

	ConnectSPI();
	relid = PoliciesRelid();
	if (!OidIsValid(relid))
		elog(ERROR, "idemgate.effect_type_policies does not exist");
	/* Waits for calls that read the old policy; see the design note. */
	if (IdemgateIsDistributed())
		LockPoliciesWithoutQueueing(relid);
	else
		LockRelationOid(relid, ExclusiveLock);
	values[0] = PointerGetDatum(effect_type);
	values[1] = BoolGetDatum(requires_approval);
	values[2] = BoolGetDatum(requires_requester);
	values[3] = Float4GetDatum(review_sample);
	SetPointerParam(values, nulls, 4, cancel_window);
	values[5] = CStringGetTextDatum(actor);
	created = DatumGetBool(ExecSavedValue(&upsert_stmt, values, nulls, false,
										  SPI_OK_INSERT_RETURNING, "could not set effect policy",
										  &isnull));

	DetailsInit(&details);
	DetailsText(&details, "effect_type", type_str);
	DetailsBool(&details, "created", created);
	DetailsBool(&details, "requires_approval", requires_approval);
	DetailsBool(&details, "requires_requester", requires_requester);
	DetailsJsonb(&details, "review_sample", JsonbNumberText(psprintf("%g", review_sample)));
	if (cancel_window)
	{
		int64		usecs = IntervalToUsecs(cancel_window);

		DetailsJsonb(&details, "cancel_window_seconds",
					 JsonbNumberText(usecs % USECS_PER_SEC == 0 ?
									 psprintf(INT64_FORMAT, usecs / USECS_PER_SEC) :
									 psprintf("%.6f", (double) usecs / USECS_PER_SEC)));
	}
	RecordEvent(NULL, NULL, "effect_policy_set", actor, DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_VOID();
}
