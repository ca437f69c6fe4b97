/*-------------------------------------------------------------------------
 *
 * src/operations/pull_api.c
 *	  The pull API for external workers: claim_effects, complete_effect
 *	  and fail_effect. The effects' state changes are the outbox's
 *	  (src/outbox/outbox.c), the same calls the dispatcher makes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/args.h"
#include "core/crypto.h"
#include "policy/effect_types.h"
#include "core/idemgate_limits.h"
#include "policy/killswitch.h"
#include "outbox/outbox.h"
#include "policy/pull_grants.h"
#include "citus/statements.h"

PG_FUNCTION_INFO_V1(idemgate_claim_effects);
PG_FUNCTION_INFO_V1(idemgate_complete_effect);
PG_FUNCTION_INFO_V1(idemgate_fail_effect);

static void PutClaimedRows(void *arg);

/* EffectTypeArg returns the required effect_type argument, checked. */
static char *
EffectTypeArg(FunctionCallInfo fcinfo, int argno)
{
	return text_to_cstring(TextArg(fcinfo, argno, "effect_type", IDEMGATE_MAX_NAME_BYTES));
}

/* StatusArg returns an optional HTTP status argument (0 when NULL). */
static int
StatusArg(FunctionCallInfo fcinfo, int argno)
{
	int			status;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return 0;
	status = PG_GETARG_INT32(argno);
	if (status < 100 || status > 599)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"status\" must be an HTTP status between 100 and 599, not %d",
						status),
				 errhint("Pass NULL when there was no HTTP response.")));
	return status;
}

/*
 * idemgate_claim_effects implements claim_effects(effect_type, batch,
 * lease): settles expired leases of the type, then, unless the kill switch
 * is off or the type is paused, marks up to batch due pending effects of approved runs sending
 * under one fresh lease owner and returns them.
 */
Datum
idemgate_claim_effects(PG_FUNCTION_ARGS)
{
	char	   *effect_type = EffectTypeArg(fcinfo, 0);
	int32		batch;
	Interval   *lease;
	ReturnSetInfo *rsinfo;

	batch = REQUIRED_ARG(1, "batch", INT32);
	if (batch < 1 || batch > 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"batch\" must be between 1 and 1000, not %d", batch)));
	lease = IntervalArg(fcinfo, 2, "lease", 0,
						(int64) IDEMGATE_MAX_EFFECT_LEASE_SECS * USECS_PER_SEC,
						"Send within the lease, or claim fewer effects per call.");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConnectSPI();
	CheckPullAllowed(effect_type);
	SettleExpiredLeases(effect_type);
	if (!ActionsEnabled() || EffectTypePaused(effect_type))
	{
		SPI_finish();
		return (Datum) 0;
	}

	ClaimEffectsOfType(effect_type, batch, RandomUuid(), lease, PutClaimedRows, rsinfo);
	SPI_finish();
	return (Datum) 0;
}

/* PutClaimedRows returns the rows a claim statement just took (ClaimedRowsReader). */
static void
PutClaimedRows(void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		row[7];
		bool		rownulls[7];

		for (int c = 0; c < 7; c++)
			row[c] = GetResultDatum(i, c + 1, &rownulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, rownulls);
	}
}

/*
 * idemgate_complete_effect implements complete_effect(effect_id, owner,
 * provider_id, status): true when the effect was completed, false when the
 * lease was lost.
 */
Datum
idemgate_complete_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	pg_uuid_t  *owner;
	char	   *provider_id = NULL;
	int			status;
	bool		done;

	effect_id = REQUIRED_ARG(0, "effect_id", UUID_P);
	owner = REQUIRED_ARG(1, "owner", UUID_P);
	if (!PG_ARGISNULL(2))
		provider_id = text_to_cstring(TextArg(fcinfo, 2, "provider_id",
											  IDEMGATE_MAX_PROVIDER_ID_BYTES));
	status = StatusArg(fcinfo, 3);

	ConnectSPI();
	CheckPullAllowedForEffect(effect_id);
	done = CompleteEffect(effect_id, owner, provider_id, status);
	SPI_finish();
	PG_RETURN_BOOL(done);
}

/*
 * idemgate_fail_effect implements fail_effect(effect_id, owner,
 * error_class, error, retry_after, status): the effect's new state, or
 * NULL when the lease was lost.
 */
Datum
idemgate_fail_effect(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *effect_id;
	pg_uuid_t  *owner;
	char	   *error_class;
	char	   *error = NULL;
	int64		retry_after = -1;
	int			status;
	const char *new_state;

	effect_id = REQUIRED_ARG(0, "effect_id", UUID_P);
	owner = REQUIRED_ARG(1, "owner", UUID_P);
	RequireArg(fcinfo, 2, "error_class");
	error_class = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!IsErrorClass(error_class))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"error_class\" must be a known error class, not \"%s\"",
						TruncateForMessage(error_class)),
				 errhint(ERROR_CLASS_HINT)));
	if (!PG_ARGISNULL(3))
		error = text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (!PG_ARGISNULL(4))
	{
		retry_after = IntervalToUsecs(PG_GETARG_INTERVAL_P(4));
		if (retry_after < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"retry_after\" must not be negative"),
					 errhint("Pass the Retry-After header as an interval, "
							 "or NULL when there was none.")));
	}
	status = StatusArg(fcinfo, 5);

	ConnectSPI();
	CheckPullAllowedForEffect(effect_id);
	new_state = FailEffect(effect_id, owner, error_class, error, retry_after, status);
	SPI_finish();
	if (new_state == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(new_state));
}
