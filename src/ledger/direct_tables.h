/*-------------------------------------------------------------------------
 *
 * src/ledger/direct_tables.h
 *	  The tables the claim's direct paths write, and whether they have the
 *	  shape those paths were written for.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DIRECT_TABLES_H
#define IDEMGATE_DIRECT_TABLES_H

#include "postgres.h"
#include "utils/rel.h"

/* How the statement fills a known column it does not name. */
typedef enum KnownDefault
{
	DEF_NONE,					/* no default (the statement names the column) */
	DEF_ZERO,					/* DEFAULT 0 */
	DEF_NOW,					/* DEFAULT pg_catalog.now() */
	DEF_IDENTITY				/* GENERATED ALWAYS AS IDENTITY */
} KnownDefault;

/*
 * A column the direct paths write, as the extension creates it (its type
 * with no modifier and the type's collation, NOT NULL or not, its default).
 */
typedef struct KnownColumn
{
	const char *name;
	Oid			type;
	bool		notnull;
	KnownDefault def;
} KnownColumn;

/* The columns of idemgate.runs, as the claim statement fills them. */
typedef enum RunColumn
{
	COL_KEY, COL_WORKFLOW, COL_STATE, COL_HASH, COL_PAYLOAD, COL_OWNER,
	COL_EXPIRES, COL_STARTED, COL_VERSION, COL_FAILURES, COL_RESULT,
	COL_REPLACES, COL_CREATED, COL_UPDATED, COL_VALIDATIONS, COL_ORIGIN, NUM_RUN_COLUMNS
} RunColumn;

/* The columns of idemgate.events, as the duplicate event statement fills them. */
typedef enum EventColumn
{
	EV_ID, EV_AT, EV_KEY, EV_EFFECT, EV_KIND, EV_ACTOR, EV_DETAILS, NUM_EVENT_COLUMNS
} EventColumn;

/* Columns a table may have for the direct paths (runs has 17). */
#define MAX_DIRECT_ATTS 64

/*
 * What the direct paths know about one of our tables, from its relcache
 * entry and catalogs: kept until a relcache invalidation of the table (any
 * ALTER, a new trigger, rule, policy, index or constraint, a drop) makes
 * the next call look again.
 */
typedef struct DirectTable
{
	const char *name;
	const KnownColumn *known;
	int			nknown;
	Oid			relid;			/* InvalidOid: look it up again */
	bool		checked;		/* fits and what follows are current */
	bool		fits;			/* the table has the shape of the design note */
	int			natts;
	int16		map[MAX_DIRECT_ATTS];	/* known column of each attribute, or ATT_* */
	Datum		constant[MAX_DIRECT_ATTS];	/* ATT_CONST: the value */
	bool		constant_null[MAX_DIRECT_ATTS];
	MemoryContext cxt;			/* holds the constants */
	AttrNumber	attnums[NUM_RUN_COLUMNS];	/* attribute of each known column */
	Oid			pkey;			/* the primary key index */
	Oid			id_seq;			/* the identity sequence of events.id */
} DirectTable;

/* idemgate.runs and idemgate.events, as this backend knows them. */
extern DirectTable DirectRunsTable;
extern DirectTable DirectEventsTable;

/*
 * OpenDirectTable opens t with the lock an INSERT takes when it has the
 * direct paths' shape, else returns NULL; FillDirectRow puts the known
 * columns' values (col/colnull, in the order of t->known) and the other
 * columns' constants into values/nulls in the table's column order.
 */
extern Relation OpenDirectTable(DirectTable *t);
extern void FillDirectRow(DirectTable *t, const Datum *col, const bool *colnull,
						  Datum *values, bool *nulls);

#endif
