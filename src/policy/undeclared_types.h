/*-------------------------------------------------------------------------
 *
 * src/policy/undeclared_types.h
 *	  A NOTICE for an effect type that nothing declares (a typo, usually).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_UNDECLARED_TYPES_H
#define IDEMGATE_UNDECLARED_TYPES_H

#include "policy/effect_types.h"

/*
 * NoticeUndeclaredTypes: for each type of an enqueue that no endpoint,
 * pull grant or policy names, one NOTICE naming the types that are
 * declared (inside SPI).
 */
extern void NoticeUndeclaredTypes(const ParsedEffect *parsed, int n);

/*
 * NoticeNewGrantType: the same for grant_effect_type, when the type has
 * no endpoint, policy, other grant or pending effect (inside SPI).
 */
extern void NoticeNewGrantType(text *effect_type);

#endif
