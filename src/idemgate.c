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

#include "dispatcher.h"
#include "dispatcher_shmem.h"
#include "extension_notice.h"
#include "guc.h"
#include "payload_mismatches.h"
#include "permission_hints.h"
#include "rate_limit.h"
#include "send_barrier.h"
#include "shard_autocommit.h"
#include "token_log_redaction.h"

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
