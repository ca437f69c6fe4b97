/*-------------------------------------------------------------------------
 *
 * json_walk.h
 *	  One pass over a JSON text with the callbacks a reader needs.
 *
 * A provider's answer (delivery/answer_body.c: its id field) and the
 * secrets file (policy/secrets.c: its name/value pairs) are read the same
 * way: a lexer over the text and four callbacks that look at object
 * fields, scalars, and the start of nested objects and arrays, telling the
 * top level from deeper ones by the lexer's lex_level.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_JSON_WALK_H
#define IDEMGATE_JSON_WALK_H

#include "postgres.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"

#include "core/pg_compat.h"

/*
 * WalkJson parses len bytes of json (checked valid in the database
 * encoding) with the callbacks on state; *lex is the lexer, which the
 * callbacks read their depth from. True when the text is JSON.
 */
static inline bool
WalkJson(char *json, size_t len, void *state, JsonLexContext **lex,
		 json_ofield_action field, json_scalar_action scalar,
		 json_struct_action object_start, json_struct_action array_start)
{
	JsonSemAction sem;

	memset(&sem, 0, sizeof(sem));
	*lex = MakeJsonLexer(json, (int) len, GetDatabaseEncoding(), true);
	sem.semstate = state;
	sem.object_field_start = field;
	sem.scalar = scalar;
	sem.object_start = object_start;
	sem.array_start = array_start;
	return pg_parse_json(*lex, &sem) == JSON_SUCCESS;
}

#endif
