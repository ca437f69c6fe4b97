/*-------------------------------------------------------------------------
 *
 * src/ledger/record_validation.c
 *	  record_validation: validate a model's output as the run's live owner,
 *	  count the attempt and audit the verdict.
 *
 * The run row is locked (LockOwnedRun) before the counter is bumped, so two
 * calls for one run are serialised and each gets its own attempt number.
 * The event holds the verdict and the number of errors, never the output
 * nor the error messages (which may quote it). On a 1.3 schema the verdict
 * is kept on the run: while the latest is invalid, enqueue_effect and
 * request_approval refuse (IG004), and the idemgate.max_repairs + 1-th
 * invalid one ends the run (FailInvalidOutput).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "ledger/dead_letters.h"
#include "core/doc_limits.h"
#include "ledger/events.h"
#include "core/guc.h"
#include "ledger/runs.h"
#include "citus/statements.h"
#include "ledger/validate.h"

PG_FUNCTION_INFO_V1(idemgate_record_validation);

/*
 * FailInvalidOutput ends a run whose output stayed invalid after
 * idemgate.max_repairs repairs (docs/operations.md, "Validating model
 * output"): processing → failed_terminal with a run dead letter of class
 * invalid_output, which fires terminal_failure at once. The lease ends
 * with it: the caller's next call on the run is refused.
 */
static void
FailInvalidOutput(text *key, Jsonb *payload, int32 invalid_outputs)
{
	EventDetails details;
	char	   *why = psprintf("output failed validation %d times (idemgate.max_repairs = %d)",
							   invalid_outputs, IdemgateMaxRepairs);

	DetailsInit(&details);
	MoveRunState(key, "processing", "failed_terminal", NULL, false, &details);
	DetailsText(&details, "error_class", "invalid_output");
	DetailsInt(&details, "invalid_outputs", invalid_outputs);
	RecordEvent(key, NULL, "state_changed", NULL, DetailsFinish(&details));
	RecordDeadLetter("run", key, NULL, NULL, payload, "invalid_output", why, invalid_outputs);
}

/*
 * idemgate_record_validation implements record_validation(key, owner,
 * version, output, schema): one row (valid, errors, attempt), or a row of
 * NULLs when the caller no longer owns the run (nothing is counted then).
 * A malformed schema is an error whoever owns the run.
 */
Datum
idemgate_record_validation(PG_FUNCTION_ARGS)
{
	text	   *key = KeyArg(fcinfo, 0, "key");
	pg_uuid_t  *owner;
	int64		version;
	Jsonb	   *output;
	Jsonb	   *schema;
	Jsonb	   *errors = NULL;
	bool		valid;
	OwnedRun	run;
	ReturnSetInfo *rsinfo;
	Datum		row[3] = {0, 0, 0};
	bool		rownulls[3] = {true, true, true};

	owner = REQUIRED_ARG(1, "owner", UUID_P);
	version = REQUIRED_ARG(2, "version", INT64);
	output = DocumentArg(fcinfo, 3, "output");
	schema = DocumentArg(fcinfo, 4, "schema");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	/* Validate first: an unsupported schema keyword is 22023 in any case. */
	valid = ValidateJsonb(output, schema, &errors);

	ConnectSPI();
	LockOwnedRun(key, owner, version, &run);
	if (run.found && run.owned)
	{
		int32		invalid_outputs = 0;
		bool		tracked = RunValidationTracked();
		int32		attempt = tracked ? RecordValidationVerdict(key, valid, &invalid_outputs) :
			CountValidation(key);
		EventDetails details;

		DetailsInit(&details);
		DetailsBool(&details, "valid", valid);
		DetailsInt(&details, "attempt", attempt);
		DetailsInt(&details, "error_count",
				   JB_ROOT_IS_SCALAR(errors) ? 0 : JB_ROOT_COUNT(errors));
		RecordEvent(key, NULL, "validation_recorded", NULL, DetailsFinish(&details));
		if (tracked && !valid && strcmp(run.state, "processing") == 0 &&
			invalid_outputs > IdemgateMaxRepairs)
			FailInvalidOutput(key, run.payload, invalid_outputs);

		row[0] = BoolGetDatum(valid);
		row[1] = JsonbPGetDatum(errors);
		row[2] = Int32GetDatum(attempt);
		rownulls[0] = rownulls[1] = rownulls[2] = false;
	}
	/* errors was allocated before SPI_connect, so it outlives SPI_finish. */
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	SPI_finish();
	return (Datum) 0;
}
