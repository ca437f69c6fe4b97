/*-------------------------------------------------------------------------
 *
 * src/citus/statements.h
 *	  Saved SPI plans and small helpers to read SPI results.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_STATEMENTS_H
#define IDEMGATE_STATEMENTS_H

#include "postgres.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"

/* A statement prepared once per backend and kept for its lifetime. */
typedef struct SavedStatement
{
	const char *sql;
	int			nargs;
	Oid			argtypes[16];
	SPIPlanPtr	plan;
	int			cursor_options;	/* e.g. CURSOR_OPT_GENERIC_PLAN; 0 = default */
	bool		planned;		/* executed once since it was prepared */
	/* Set on first use; see "Routing on Citus" in src/citus/statements.c. */
	int			route_arg;		/* 0 unknown, -1 none, else $n of the route */
	SPIPlanPtr	dist_plan;		/* the statement with its bucket added */
	bool		dist_planned;
	SPIPlanPtr	dist_any_plan;	/* its form for every shard */
	bool		dist_any_planned;
	SPIPlanPtr	shard_plan;		/* its form for one shard's buckets */
	bool		shard_planned;
	struct LocalForms *local;	/* its forms on shards here (local_shards.h) */
} SavedStatement;

/*
 * For SavedStatement.cursor_options: plan once, with the parameters
 * unknown. For statements whose generic plan is known to be index scans
 * only but whose custom plans look cheaper to the plan cache (an array
 * parameter's length, a LIMIT), which would otherwise replan every call.
 * ExecSaved makes (and remakes, after an invalidation) such a plan with
 * sequential and bitmap scans off: the plan is made once and kept, maybe
 * while the tables are empty, and must stay an index probe when they hold
 * a million rows.
 */
#define GENERIC_PLAN NULL, CURSOR_OPT_GENERIC_PLAN

extern Oid	IdemgateRelid(const char *name);
extern int	ExecSaved(SavedStatement *stmt, Datum *values, const char *nulls,
					  bool read_only, long count);
extern int	ExecSavedInBuckets(SavedStatement *stmt, Datum *values, const char *nulls,
							   bool read_only, long count, Datum buckets);
extern int	ExecSavedLatest(SavedStatement *stmt, Datum *values, const char *nulls,
							long count);
extern int	ExecSavedOnShard(SavedStatement *stmt, Datum *values, const char *nulls,
							 bool read_only, long count, bool latest, int bucket);
/*
 * ResultColumnArray returns column col (1-based, never NULL) of every row
 * of the last result as an array of elemtype: the keys or ids a statement
 * just locked, for the next statement's = ANY ($n).
 */
extern Datum ResultColumnArray(int col, Oid elemtype);
extern Datum GetResultDatum(int row, int col, bool *isnull);

/* GetResultCString returns column col of row of the last result as a C string, NULL for NULL. */
extern char *GetResultCString(int row, int col);

/*
 * ExecSavedExpect runs stmt like ExecSaved and raises failure (an elog
 * ERROR) unless it returns expected; ExecSavedOneRow also unless it
 * processed exactly one row.
 */
extern void ExecSavedExpect(SavedStatement *stmt, Datum *values, const char *nulls,
							bool read_only, long count, int expected, const char *failure);
extern void ExecSavedOneRow(SavedStatement *stmt, Datum *values, const char *nulls,
							bool read_only, long count, int expected, const char *failure);

/*
 * ExecSavedValue runs stmt, whose one row answers one question, like
 * ExecSavedOneRow, and returns the row's first column (*isnull: NULL).
 */
extern Datum ExecSavedValue(SavedStatement *stmt, Datum *values, const char *nulls,
							bool read_only, int expected, const char *failure, bool *isnull);

/*
 * PutResultRows puts the first ncols columns of every row of the last
 * result into a materialised set-returning function's tuplestore.
 */
extern void PutResultRows(ReturnSetInfo *rsinfo, int ncols);

/*
 * ExecSavedFind runs stmt, a SELECT of at most one row with one parameter
 * (value), raising failure when it fails; it tells whether a row came back.
 */
extern bool ExecSavedFind(SavedStatement *stmt, Datum value, const char *failure);

/*
 * ExecSavedByKey runs stmt, a write of the rows its one parameter (key)
 * names, raising failure unless it returns expected; it tells whether a
 * row was written.
 */
extern bool ExecSavedByKey(SavedStatement *stmt, Datum key, int expected, const char *failure);
extern void ConnectSPI(void);
extern void SetTextParam(Datum *values, char *nulls, int i, const char *s);
extern void SetPointerParam(Datum *values, char *nulls, int i, const void *p);

#endif
