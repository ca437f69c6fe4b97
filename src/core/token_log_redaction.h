/*-------------------------------------------------------------------------
 *
 * src/core/token_log_redaction.h
 *	  Approval tokens out of the server log, whoever logs in.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_TOKEN_LOG_REDACTION_H
#define IDEMGATE_TOKEN_LOG_REDACTION_H

extern void InstallTokenLogRedaction(void);

#endif
