/*-------------------------------------------------------------------------
 *
 * src/core/guc.h
 *	  The idemgate.* settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_GUC_H
#define IDEMGATE_GUC_H

extern char *IdemgateDatabase;
extern int	IdemgateDispatchers;
extern int	IdemgateBatchSize;
extern int	IdemgatePollIntervalMs;
extern int	IdemgateMaxInFlight;
extern int	IdemgateCircuitFailures;
extern int	IdemgateCircuitMaxHoldSecs;
extern bool IdemgateActionsEnabled;
extern char *IdemgateAllowedHttpHosts;
extern int	IdemgateMaxBackoffSecs;
extern int	IdemgateMaxLeaseLifeSecs;
extern int	IdemgateMaxRunAttempts;
extern int	IdemgateRetentionSecs;
extern int	IdemgateAlertFailures;
extern int	IdemgateAlertStuckAfterSecs;
extern int	IdemgateAlertDispatcherMissingAfterSecs;
extern int	IdemgateAlertStalledAfterSecs;
extern int	IdemgateAlertLeaseTakeovers;
extern int	IdemgateAlertApprovalWaitSecs;
extern int	IdemgateMaxRepairs;
extern int	IdemgateTombstoneRetentionSecs;
extern bool IdemgateAlertNotifyDetails;
extern char *IdemgateSecretsFile;
extern bool IdemgateCitusLocalShards;

extern void DefineIdemgateSettings(void);

#endif
