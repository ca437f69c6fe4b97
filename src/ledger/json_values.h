/*-------------------------------------------------------------------------
 *
 * src/ledger/json_values.h
 *	  JSON values as idemgate.validate() sees them (src/ledger/json_values.c):
 *	  keys, paths, numbers, JSON Schema type names, values as text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_JSON_VALUES_H
#define IDEMGATE_JSON_VALUES_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

/* JSON Schema type names, as bits of SchemaNode.types. */
#define VT_OBJECT	0x01
#define VT_ARRAY	0x02
#define VT_STRING	0x04
#define VT_NUMBER	0x08
#define VT_INTEGER	0x10
#define VT_BOOLEAN	0x20
#define VT_NULL		0x40


/* KeyIs tells whether a jsonb key (not NUL-terminated) equals word. */
static inline bool
KeyIs(const char *key, int len, const char *word)
{
	return strlen(word) == (size_t) len && memcmp(key, word, len) == 0;
}

/* TruncatePath restores path to an earlier length. */
static inline void
TruncatePath(StringInfo path, int len)
{
	path->len = len;
	path->data[len] = '\0';
}

extern int CompareKeys(const char *a, int alen, const char *b, int blen);
extern int CompareStringValues(const void *a, const void *b);
extern char *QuotedName(const char *name, int len);
extern void AppendPathKey(StringInfo path, const char *name, int len);
extern bool NumericIsIntegral(Numeric n);
extern int NumericCompare(Numeric a, Numeric b);
extern char *NumericText(Numeric n);
extern const char *ValueTypeName(const JsonbValue *v);
extern char *ValueText(const JsonbValue *v);
extern char *TypeListText(uint32 types);
extern void RootValue(Jsonb *jb, JsonbValue *out);
extern bool JsonValuesEqual(const JsonbValue *a, const JsonbValue *b);
extern uint32 TypeBit(const char *name, int len);

#endif
