/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher.h
 *	  The dispatcher background worker (the launcher starts it by name).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DISPATCHER_H
#define IDEMGATE_DISPATCHER_H

#include "postgres.h"

extern void RegisterIdemgateLauncher(void);

extern PGDLLEXPORT void IdemgateLauncherMain(Datum main_arg);
extern PGDLLEXPORT void IdemgateDispatcherMain(Datum main_arg);

#endif
