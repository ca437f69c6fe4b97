/*-------------------------------------------------------------------------
 *
 * src/policy/killswitch.h
 *	  The kill switch: external sends happen only when both the setting
 *	  idemgate.actions_enabled and the audited switch are on.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_KILLSWITCH_H
#define IDEMGATE_KILLSWITCH_H

/* ActionsEnabled reads both switches now. Must be called inside SPI. */
extern bool ActionsEnabled(void);

#endif
