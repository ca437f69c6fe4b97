/*-------------------------------------------------------------------------
 *
 * src/core/extension_notice.h
 *	  The NOTICE of CREATE EXTENSION in a database no dispatcher serves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EXTENSION_NOTICE_H
#define IDEMGATE_EXTENSION_NOTICE_H

/* InstallExtensionNotice installs the utility hook (preload only). */
extern void InstallExtensionNotice(void);

/* NoticeNotPreloaded: the NOTICE of CREATE EXTENSION without the preload. */
extern void NoticeNotPreloaded(void);

/* The words both notices and dispatcher_status() use for that case. */
#define IDEMGATE_NOT_PRELOADED_MSG \
	"idemgate is not in shared_preload_libraries: no dispatcher runs on this server"
#define IDEMGATE_NOT_PRELOADED_DETAIL \
	"HTTP effects wait pending until a worker takes them with claim_effects(); idemgate.database " \
	"and idemgate.dispatchers have no effect."
#define IDEMGATE_NOT_PRELOADED_HINT \
	"Add idemgate to shared_preload_libraries in postgresql.conf and restart the server to have " \
	"effects sent."

#endif
