/*-------------------------------------------------------------------------
 *
 * src/ledger/json_schema.h
 *	  A JSON Schema compiled for idemgate.validate() (src/ledger/json_schema.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_JSON_SCHEMA_H
#define IDEMGATE_JSON_SCHEMA_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

/* How deeply schemas (properties / items) may nest. */
#define VALIDATE_MAX_SCHEMA_DEPTH 1000

#define SUPPORTED_KEYWORDS "type, properties, required, additionalProperties, " \
	"enum, const, minLength, maxLength, minimum, maximum, items, minItems, " \
	"maxItems, pattern"
#define ANNOTATION_KEYWORDS "$schema, $id, title, description, default, examples"

struct SchemaNode;

/* One entry of "properties". */
typedef struct SchemaProperty
{
	const char *name;			/* points into the schema jsonb */
	int			len;
	struct SchemaNode *schema;
} SchemaProperty;

/* A compiled schema object; absent keywords are 0 / -1 / NULL. */
typedef struct SchemaNode
{
	uint32		types;			/* VT_* bits; 0 = any type */
	JsonbContainer *enumValues; /* "enum" array */
	bool		hasConst;
	JsonbValue	constValue;		/* "const", scalar or jbvBinary */
	int32		minLength;		/* characters; -1 = absent */
	int32		maxLength;
	Numeric		minimum;		/* inclusive; NULL = absent */
	Numeric		maximum;
	text	   *pattern;		/* "pattern", already syntax-checked */
	int32		minItems;		/* -1 = absent */
	int32		maxItems;
	struct SchemaNode *items;	/* schema of every array element */
	int			nprops;
	SchemaProperty *props;		/* in jsonb key order (length, then bytes) */
	int			nrequired;
	JsonbValue *required;		/* jbvString names */
	bool		additionalProperties;	/* false only if given as false */
} SchemaNode;

/*
 * CompileSchema turns schema sv (at path, nested depth deep) into a
 * SchemaNode, raising 22023 for any keyword it does not implement and any
 * malformed one. Allocates in the current memory context.
 */
extern SchemaNode *CompileSchema(const JsonbValue *sv, StringInfo path, int depth);

#endif
