/*-------------------------------------------------------------------------
 *
 * src/delivery/dispatcher.h
 *	  The launcher and dispatcher background workers.
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
