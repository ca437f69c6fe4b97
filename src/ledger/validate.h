/*-------------------------------------------------------------------------
 *
 * src/ledger/validate.h
 *	  Checking a model's JSON output against a JSON Schema subset.
 *
 * Shared by idemgate.validate() (validate.c) and idemgate.record_validation().
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_VALIDATE_H
#define IDEMGATE_VALIDATE_H

#include "postgres.h"

#include "utils/jsonb.h"

/*
 * ValidateJsonb checks output against schema (both detoasted, e.g. from
 * PG_GETARG_JSONB_P) and returns true when output conforms.
 *
 * When errors_out is not NULL it receives a jsonb array, allocated in the
 * caller's memory context, of {"path": ..., "error": ...} objects in document
 * order ('[]' when valid).
 *
 * A schema that uses an unsupported keyword or is malformed raises ERROR
 * with SQLSTATE 22023 (ERRCODE_INVALID_PARAMETER_VALUE), whatever the output.
 */
extern bool ValidateJsonb(Jsonb *output, Jsonb *schema, Jsonb **errors_out);

#endif							/* IDEMGATE_VALIDATE_H */
