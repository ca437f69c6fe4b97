/*-------------------------------------------------------------------------
 *
 * src/delivery/launcher.h
 *	  The launcher background worker: starts the dispatchers in
 *	  idemgate.database and restarts any that exits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_LAUNCHER_H
#define IDEMGATE_LAUNCHER_H

#include "postgres.h"

extern void RegisterIdemgateLauncher(void);
extern PGDLLEXPORT void IdemgateLauncherMain(Datum main_arg);

#endif
