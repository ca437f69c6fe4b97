/*-------------------------------------------------------------------------
 *
 * src/idemgate.c
 *	  Module entry point: settings, and the dispatcher when preloaded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "delivery/launcher.h"
#include "core/dispatcher_shmem.h"
#include "core/extension_notice.h"
#include "core/guc.h"
#include "ledger/payload_mismatches.h"
#include "core/permission_hints.h"
#include "policy/rate_limit.h"
#include "delivery/send_barrier.h"
#include "citus/shard_autocommit.h"
#include "core/token_log_redaction.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* _PG_init defines the settings; with shared_preload_libraries it also starts the dispatcher. */
void
_PG_init(void)
{
	DefineIdemgateSettings();

	/* The dispatcher needs shared memory and a worker slot: preload only. */
	if (process_shared_preload_libraries_in_progress)
	{
		DispatcherShmemDefine();
		SendBarrierShmemDefine();
		RateLimitShmemDefine();
		PayloadMismatchShmemDefine();
		RegisterIdemgateLauncher();
		InstallExtensionNotice();
		InstallShardAutocommit();
		InstallTokenLogRedaction();
		InstallPermissionHints();
	}
	else
		NoticeNotPreloaded();
}
