/*-------------------------------------------------------------------------
 *
 * src/effect_types.h
 *	  Per-type controls: pausing an effect type.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_EFFECT_TYPES_H
#define IDEMGATE_EFFECT_TYPES_H

/*
 * EffectTypePaused is true while effect_type has a row in
 * idemgate.paused_effect_types (read with the current snapshot). Must be
 * called inside SPI.
 */
extern bool EffectTypePaused(const char *effect_type);

#endif
