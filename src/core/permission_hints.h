/*-------------------------------------------------------------------------
 *
 * src/core/permission_hints.h
 *	  A HINT naming the bundle on PostgreSQL's permission errors.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_PERMISSION_HINTS_H
#define IDEMGATE_PERMISSION_HINTS_H

/* InstallPermissionHints installs the emit_log_hook (preload only). */
extern void InstallPermissionHints(void);

#endif
