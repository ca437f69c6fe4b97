/*-------------------------------------------------------------------------
 *
 * src/ledger/run_calls.c
 *	  The run transitions' entry points (SPEC §2–§4): cas_transition,
 *	  renew_lease, fail, supersede and complete_settled_runs. They read and
 *	  check their arguments; the runs module (src/ledger/runs.c) locks and
 *	  writes the rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "citus/statements.h"
#include "core/args.h"
#include "core/doc_limits.h"
#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "core/sqlstates.h"
#include "ledger/dead_letters.h"
#include "ledger/events.h"
#include "ledger/runs.h"

PG_FUNCTION_INFO_V1(idemgate_cas_transition);
PG_FUNCTION_INFO_V1(idemgate_renew_lease);
PG_FUNCTION_INFO_V1(idemgate_fail);
PG_FUNCTION_INFO_V1(idemgate_supersede);
PG_FUNCTION_INFO_V1(idemgate_complete_settled_runs);

/* StateArg returns a required run-state argument, checked against the list. */
static char *
StateArg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	char	   *state;

	RequireArg(fcinfo, argno, name);
	state = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!IsRunState(state))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a run state, not \"%s\"", name,
						TruncateForMessage(state)),
				 errhint("The states are processing, awaiting_human, approved, completed, "
						 "failed_retryable and failed_terminal.")));
	return state;
}

/*
 * idemgate_cas_transition implements cas_transition(key, owner, version,
 * new_state, result): the new version, or NULL when ownership was lost.
 */
Datum
idemgate_cas_transition(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	pg_uuid_t  *owner;
	int64		version;
	char	   *new_state;
	Jsonb	   *result;
	OwnedRun	run;
	int64		new_version;

	owner = REQUIRED_ARG(1, "owner", UUID_P);
	version = REQUIRED_ARG(2, "version", INT64);
	new_state = StateArg(fcinfo, 3, "new_state");
	CheckDocumentArg(fcinfo, 4, "result");
	result = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);

	ConnectSPI();
	LockOwnedRun(key, owner, version, &run);
	if (!run.found || !run.owned)
	{
		SPI_finish();
		PG_RETURN_NULL();
	}
	if (!CasAllowed(run.state, new_state))
		ReportIllegalTransition(text_to_cstring(key), run.state, new_state);

	new_version = SetRunState(key, run.state, new_state, result,
							  strncmp(new_state, "failed_", 7) == 0, NULL, NULL);
	if (strcmp(new_state, "failed_terminal") == 0)
	{
		char	   *error = result ? JsonbToCString(NULL, &result->root, VARSIZE(result)) : NULL;

		RecordDeadLetter("run", key, NULL, NULL, run.payload, "terminal", error,
						 run.failures + 1);
	}
	SPI_finish();
	PG_RETURN_INT64(new_version);
}

/*
 * idemgate_renew_lease implements renew_lease(key, owner, version,
 * extend_by): the new expiry, or NULL when the caller no longer owns a live
 * processing lease or the renewal would outlive idemgate.max_lease_life.
 */
Datum
idemgate_renew_lease(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	Interval   *extend_by;
	TimestampTz expires;
	bool		renewed;

	RequireArg(fcinfo, 1, "owner");
	RequireArg(fcinfo, 2, "version");
	extend_by = LeaseArg(fcinfo, 3, "extend_by");

	ConnectSPI();
	expires = RenewRunLease(key, PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), extend_by, &renewed);
	SPI_finish();
	if (!renewed)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(expires);
}

/*
 * idemgate_fail implements fail(key, owner, version, error_class, error,
 * retryable): the new state, or NULL when ownership was lost. A retryable
 * failure becomes terminal once the run has failed max_run_attempts times;
 * a terminal failure leaves a dead letter with the full payload.
 */
Datum
idemgate_fail(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	pg_uuid_t  *owner;
	int64		version;
	char	   *error_class;
	char	   *error;
	bool		retryable;
	OwnedRun	run;
	const char *new_state;
	int			failures;
	EventDetails result;
	EventDetails info;

	owner = REQUIRED_ARG(1, "owner", UUID_P);
	version = REQUIRED_ARG(2, "version", INT64);
	error_class = text_to_cstring(TextArg(fcinfo, 3, "error_class",
										  IDEMGATE_MAX_ERROR_CLASS_BYTES));
	error = PG_ARGISNULL(4) ? NULL : ClipErrorText(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	retryable = REQUIRED_ARG(5, "retryable", BOOL);

	ConnectSPI();
	LockOwnedRun(key, owner, version, &run);
	if (!run.found || !run.owned)
	{
		SPI_finish();
		PG_RETURN_NULL();
	}

	failures = run.failures + 1;
	if (strcmp(run.state, "processing") == 0)
		new_state = (retryable && failures < IdemgateMaxRunAttempts) ?
			"failed_retryable" : "failed_terminal";
	else if (!retryable && (strcmp(run.state, "awaiting_human") == 0 ||
							strcmp(run.state, "approved") == 0))
		new_state = "failed_terminal";
	else
	{
		ReportIllegalTransition(text_to_cstring(key), run.state,
								retryable ? "failed_retryable" : "failed_terminal");
		new_state = NULL;		/* keep compiler quiet */
	}

	DetailsInit(&result);
	DetailsText(&result, "error_class", error_class);
	DetailsText(&result, "error", error);
	DetailsInt(&result, "failures", failures);

	/*
	 * The event carries the error class and the failure count (never the
	 * error text, which may quote personal data); retry_exhausted marks a
	 * retryable failure made terminal by idemgate.max_run_attempts, which
	 * run_metrics counts beside the effects' retry exhaustion.
	 */
	DetailsInit(&info);
	DetailsText(&info, "error_class", error_class);
	DetailsInt(&info, "failures", failures);
	DetailsBool(&info, "retryable", retryable);
	if (retryable && strcmp(new_state, "failed_terminal") == 0)
		DetailsBool(&info, "retry_exhausted", true);
	SetRunState(key, run.state, new_state, DetailsFinish(&result), true, NULL,
				DetailsFinish(&info));
	if (strcmp(new_state, "failed_terminal") == 0)
		RecordDeadLetter("run", key, NULL, NULL, run.payload, error_class, error, failures);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(new_state));
}

/*
 * idemgate_supersede implements supersede(original_key, new_key, payload,
 * operator, reason, lease): the only replay of a finished key. The new key
 * is claimed with replaces_key set; the original run is never modified.
 */
Datum
idemgate_supersede(PG_FUNCTION_ARGS)
{
	text	   *original = KeyArg(fcinfo, 0, "original_key");
	text	   *new_key = KeyArg(fcinfo, 1, "new_key");
	Jsonb	   *payload;
	char	   *operator_name;
	char	   *reason;
	Interval   *lease;
	char	   *state;
	text	   *workflow;
	char	   *successor;
	ClaimResult res = {0};

	payload = DocumentArg(fcinfo, 2, "payload");
	operator_name = text_to_cstring(TextArg(fcinfo, 3, "operator", IDEMGATE_MAX_NAME_BYTES));
	reason = text_to_cstring(TextArg(fcinfo, 4, "reason", IDEMGATE_MAX_REASON_BYTES));
	lease = LeaseArg(fcinfo, 5, "lease");
	if (VARSIZE_ANY_EXHDR(original) == VARSIZE_ANY_EXHDR(new_key) &&
		memcmp(VARDATA_ANY(original), VARDATA_ANY(new_key), VARSIZE_ANY_EXHDR(new_key)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"new_key\" must differ from \"original_key\""),
				 errhint("A correction is a new business event with its own key "
						 "issued upstream.")));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ConnectSPI();
	if (!LockRunToSupersede(original, &state, &workflow))
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_UNKNOWN_OBJECT),
				 errmsg("run \"%s\" does not exist", text_to_cstring(original))));
	if (strcmp(state, "completed") != 0 && strcmp(state, "failed_terminal") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("run \"%s\" is %s; only completed or failed_terminal runs can "
						"be superseded",
						text_to_cstring(original), state),
				 errhint("A run in progress recovers through claim; wait for it to finish.")));
	/* An original has one successor (the same call again is a duplicate). */
	successor = RunSuccessor(original);
	if (successor != NULL && strcmp(successor, text_to_cstring(new_key)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_IDEMGATE_ILLEGAL_TRANSITION),
				 errmsg("run \"%s\" was already superseded by \"%s\"",
						text_to_cstring(original), successor),
				 errdetail("An original is superseded at most once: two live successors would "
						   "both act on it."),
				 errhint("Supersede \"%s\" instead, once it has finished.", successor)));

	ClaimRun(new_key, payload, lease, workflow,
			 NULL, original, operator_name, NULL, &res);
	if (strcmp(res.outcome, "claimed") == 0)
	{
		EventDetails details;

		DetailsInit(&details);
		DetailsText(&details, "new_key", text_to_cstring(new_key));
		DetailsText(&details, "reason", reason);
		DetailsText(&details, "original_state", state);
		RecordEvent(original, NULL, "superseded", operator_name, DetailsFinish(&details));
	}
	EmitClaimResult(fcinfo, &res);
	SPI_finish();
	return (Datum) 0;
}

/*
 * idemgate_complete_settled_runs implements complete_settled_runs(max_runs):
 * CompleteSettledRuns over max_runs approved runs from where this session
 * stopped, or over all of them when max_runs is NULL.
 */
Datum
idemgate_complete_settled_runs(PG_FUNCTION_ARGS)
{
	int			limit = 0;
	int			n;

	if (!PG_ARGISNULL(0))
	{
		limit = PG_GETARG_INT32(0);
		if (limit < 1 || limit > IDEMGATE_MAX_SETTLED_RUNS_BATCH)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"max_runs\" must be between 1 and %d, not %d",
							IDEMGATE_MAX_SETTLED_RUNS_BATCH, limit),
					 errhint("Pass NULL to look at every approved run.")));
	}
	ConnectSPI();
	n = CompleteSettledRuns(limit);
	SPI_finish();
	PG_RETURN_INT32(n);
}
