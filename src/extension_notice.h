/*-------------------------------------------------------------------------
 *
 * src/extension_notice.h
 *	  The NOTICE of CREATE EXTENSION in a database no dispatcher serves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EXTENSION_NOTICE_H
#define IDEMGATE_EXTENSION_NOTICE_H

/* InstallExtensionNotice installs the utility hook (preload only). */
extern void InstallExtensionNotice(void);

#endif
