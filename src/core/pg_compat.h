/*-------------------------------------------------------------------------
 *
 * src/core/pg_compat.h
 *	  One source for PostgreSQL 15 and 18 (README.md, "PostgreSQL
 *	  versions"): each server API that changed between them, behind one
 *	  name, guarded by the release that changed it (as pgvector and
 *	  pg_cron keep theirs). Only the call sites that need it include this;
 *	  nothing else differs per major.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_PG_COMPAT_H
#define IDEMGATE_PG_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "idemgate builds against PostgreSQL 15 to 18"
#endif

/*
 * 18: pg_attribute_noreturn() (after the declarator) became pg_noreturn
 * (before it, C11 _Noreturn). On 15, GCC accepts the attribute in front.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* 16: the JSON parser's callbacks return JsonParseErrorType. */
#if PG_VERSION_NUM >= 160000
#define JSON_ACTION_RESULT JsonParseErrorType
#define JSON_ACTION_DONE return JSON_SUCCESS
#else
#define JSON_ACTION_RESULT void
#define JSON_ACTION_DONE return
#endif

/* 17: makeJsonLexContextCstringLen takes a context to fill (NULL: allocate). */
#if PG_VERSION_NUM >= 170000
#define MakeJsonLexer(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen(NULL, (json), (len), (encoding), (need_escapes))
#else
#define MakeJsonLexer(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen((json), (len), (encoding), (need_escapes))
#endif

/* 16: pg_proc_aclcheck became object_aclcheck(ProcedureRelationId, ...). */
#if PG_VERSION_NUM >= 160000
#define FunctionAclCheck(fn, role, mode) object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define FunctionAclCheck(fn, role, mode) pg_proc_aclcheck((fn), (role), (mode))
#endif

/* 17: PGPROC.pgprocno is gone; its number is computed from its address. */
#if PG_VERSION_NUM >= 170000
#define ProcNumberOf(proc) GetNumberFromPGProc(proc)
#else
#define ProcNumberOf(proc) ((proc)->pgprocno)
#endif

/* 17: getIdentitySequence takes the relation, not its OID. */
#if PG_VERSION_NUM >= 170000
#define IdentitySequenceOf(rel, attnum) getIdentitySequence((rel), (attnum), false)
#else
#define IdentitySequenceOf(rel, attnum) getIdentitySequence(RelationGetRelid(rel), (attnum), false)
#endif

/*
 * 16: ExecInsertIndexTuples gained onlySummarizing (false: every index, as
 * an INSERT). 18: ExecCheckIndexConstraints gained the TID of a tuple being
 * updated (NULL for an insert).
 */
#if PG_VERSION_NUM >= 160000
#define InsertIndexTuples(rri, slot, estate, update, no_dup_err, spec_conflict, arbiters) \
	ExecInsertIndexTuples((rri), (slot), (estate), (update), (no_dup_err), (spec_conflict), \
						  (arbiters), false)
#else
#define InsertIndexTuples(rri, slot, estate, update, no_dup_err, spec_conflict, arbiters) \
	ExecInsertIndexTuples((rri), (slot), (estate), (update), (no_dup_err), \
						  (spec_conflict), (arbiters))
#endif
#if PG_VERSION_NUM >= 180000
#define CheckIndexConstraints(rri, slot, estate, conflict_tid, arbiters) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflict_tid), NULL, (arbiters))
#else
#define CheckIndexConstraints(rri, slot, estate, conflict_tid, arbiters) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflict_tid), (arbiters))
#endif

/*
 * 18: RelationGetPrimaryKeyIndex says whether a deferrable key will do (no:
 * a look-up by it must find the one row); index_beginscan takes
 * instrumentation (none).
 */
#if PG_VERSION_NUM >= 180000
#define PrimaryKeyIndexOf(rel) RelationGetPrimaryKeyIndex((rel), false)
#define BeginIndexScan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define PrimaryKeyIndexOf(rel) RelationGetPrimaryKeyIndex(rel)
#define BeginIndexScan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * 18: NOT NULL is a pg_constraint row too (contype 'n'), besides
 * attnotnull, which still says whether the column takes NULL.
 */
#if PG_VERSION_NUM >= 180000
#define IsNotNullConstraint(con) ((con)->contype == CONSTRAINT_NOTNULL)
#else
#define IsNotNullConstraint(con) false
#endif

/* 18: ExecutorRun_hook lost execute_once. */
#if PG_VERSION_NUM >= 180000
#define EXECUTOR_RUN_PARAMS QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/* 17: PGPROC's local transaction id moved into vxid. */
#if PG_VERSION_NUM >= 170000
#define MyLocalTransactionId (MyProc->vxid.lxid)
#else
#define MyLocalTransactionId (MyProc->lxid)
#endif

/* 17: LockHeldByMe gained "or a stronger mode". */
#if PG_VERSION_NUM >= 170000
#define LockHeldByMeCompat(tag, mode) LockHeldByMe((tag), (mode), false)
#else
#define LockHeldByMeCompat(tag, mode) LockHeldByMe((tag), (mode))
#endif

#endif
