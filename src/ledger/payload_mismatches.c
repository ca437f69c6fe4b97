/*-------------------------------------------------------------------------
 *
 * src/ledger/payload_mismatches.c
 *	  payload_mismatches(): the IG001 refusals of claim, counted per
 *	  workflow, for the payload_mismatch alert (docs/operations.md,
 *	  "Alerts").
 *
 * Design note. A claim whose key is known with another payload hash
 * raises IG001, and its transaction rolls back: a row written there would
 * vanish with it. So the count lives in shared memory (a segment of its
 * own, IDEMGATE_MISMATCH_SLOTS slots under one spinlock), written by
 * CountPayloadMismatch just before the error is raised. One slot per
 * database and workflow holds an episode: the number of mismatches, the
 * first and last time, and the first IDEMGATE_ALERT_FIRST_KEYS keys (each
 * cut to IDEMGATE_ALERT_KEY_CHARS characters). A mismatch more than
 * IDEMGATE_MISMATCH_WINDOW_USECS after the episode's last one starts a new
 * episode. When every slot is taken, the one whose last mismatch is the
 * oldest is reused.
 *
 * An operator who has investigated clears this database's counts with
 * clear_payload_mismatches() (audited), which ends the alert at once.
 *
 * The counts survive a restart and a crash: every change writes the slots
 * to a file in the data directory (MISMATCH_FILE, written whole to a
 * temporary file and renamed, under an flock so the newest copy is the
 * one kept; no fsync: a crash of the server keeps the kernel's copy), and
 * a new segment (at start, or after a crash reset it) reads it back.
 * IG001 is rare, so a write per refusal costs nothing that matters.
 * Without shared_preload_libraries nothing is counted: docs/operations.md
 * says so. The server log keeps every IG001 with its key in any case.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "common/file_perm.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "ledger/events.h"
#include "core/idemgate_limits.h"
#include "ledger/payload_mismatches.h"
#include "citus/statements.h"
#include "core/shmem_segment.h"

PG_FUNCTION_INFO_V1(idemgate_payload_mismatches);
PG_FUNCTION_INFO_V1(idemgate_clear_payload_mismatches);

/* A key as shown: at most IDEMGATE_ALERT_KEY_CHARS characters. */
#define KEY_BYTES (IDEMGATE_ALERT_KEY_CHARS * MAX_MULTIBYTE_CHAR_LEN + 1)

typedef struct MismatchSlot
{
	Oid			dboid;			/* InvalidOid: free */
	bool		has_workflow;
	char		workflow[IDEMGATE_MAX_NAME_BYTES + 1];
	int64		count;
	TimestampTz first_at;
	TimestampTz last_at;
	int			nkeys;
	char		keys[IDEMGATE_ALERT_FIRST_KEYS][KEY_BYTES];
} MismatchSlot;

typedef struct MismatchShared
{
	slock_t		lock;
	MismatchSlot slots[IDEMGATE_MISMATCH_SLOTS];
} MismatchShared;

/* NULL unless the library was preloaded. */
static MismatchShared *Mismatches = NULL;

/* Where the slots are kept across restarts, relative to the data directory. */
#define MISMATCH_FILE "idemgate_payload_mismatches"
#define MISMATCH_FILE_MAGIC 0x49474d31	/* "IGM1" */

/* The file: magic, the size of the slots (a new layout is ignored), the slots. */
typedef struct MismatchFileHeader
{
	uint32		magic;
	uint32		slots_size;
} MismatchFileHeader;

/*
 * LoadMismatches reads the slots the last change wrote into m, if the file
 * is there and of this layout; a missing or short file leaves them free.
 */
static void
LoadMismatches(MismatchShared *m)
{
	MismatchFileHeader h;
	int			fd = open(MISMATCH_FILE, O_RDONLY | PG_BINARY, 0);

	if (fd < 0)
		return;
	if (read(fd, &h, sizeof(h)) == sizeof(h) && h.magic == MISMATCH_FILE_MAGIC &&
		h.slots_size == sizeof(m->slots) &&
		read(fd, m->slots, sizeof(m->slots)) != sizeof(m->slots))
		memset(m->slots, 0, sizeof(m->slots));
	close(fd);
}

/*
 * SaveMismatches writes the slots to MISMATCH_FILE (see the design note).
 * A failure is logged and otherwise ignored: the counts in memory stand.
 */
static void
SaveMismatches(void)
{
	MismatchFileHeader h = {MISMATCH_FILE_MAGIC, sizeof(Mismatches->slots)};
	MismatchSlot *copy;
	char		tmp[MAXPGPATH];
	int			lock_fd;
	int			fd;
	bool		ok;

	lock_fd = open(MISMATCH_FILE ".lock", O_RDWR | O_CREAT | PG_BINARY, pg_file_create_mode);
	if (lock_fd < 0)
		return;
	if (flock(lock_fd, LOCK_EX) != 0)
	{
		close(lock_fd);
		return;
	}
	copy = palloc(sizeof(Mismatches->slots));
	SpinLockAcquire(&Mismatches->lock);
	memcpy(copy, Mismatches->slots, sizeof(Mismatches->slots));
	SpinLockRelease(&Mismatches->lock);

	snprintf(tmp, sizeof(tmp), "%s.tmp", MISMATCH_FILE);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY, pg_file_create_mode);
	ok = fd >= 0 &&
		write(fd, &h, sizeof(h)) == sizeof(h) &&
		write(fd, copy, sizeof(Mismatches->slots)) == sizeof(Mismatches->slots);
	if (fd >= 0)
		ok &= close(fd) == 0;
	ok = ok && rename(tmp, MISMATCH_FILE) == 0;
	if (!ok)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("idemgate: could not save the payload mismatch counts to \"%s\": %m",
						MISMATCH_FILE),
				 errdetail("The counts stand in shared memory; a restart would lose them.")));
	flock(lock_fd, LOCK_UN);
	close(lock_fd);
	pfree(copy);
}

/* InitMismatches sets up a new segment: the slots the file kept, or free. */
static void
InitMismatches(void *segment)
{
	MismatchShared *m = segment;

	SpinLockInit(&m->lock);
	memset(m->slots, 0, sizeof(m->slots));
	LoadMismatches(m);
}

/* PayloadMismatchShmemDefine defines the segment; from _PG_init. */
void
PayloadMismatchShmemDefine(void)
{
	DefineShmemSegment("idemgate payload mismatches", sizeof(MismatchShared),
					   InitMismatches, (void **) &Mismatches);
}

/*
 * ShownKey copies key into buf (KEY_BYTES) as alerts show it: whole when
 * it has at most IDEMGATE_ALERT_KEY_CHARS characters, else its first
 * IDEMGATE_ALERT_KEY_CHARS - 3 characters and "...", as the alerts view
 * does.
 */
static void
ShownKey(char *buf, const char *key, int len)
{
	int			keep = len;

	if (pg_mbstrlen_with_len(key, len) > IDEMGATE_ALERT_KEY_CHARS)
		keep = pg_mbcharcliplen(key, len, IDEMGATE_ALERT_KEY_CHARS - 3);
	memcpy(buf, key, keep);
	strcpy(buf + keep, keep < len ? "..." : "");
}

/*
 * CountPayloadMismatch counts one mismatch (see payload_mismatches.h). The
 * key and workflow are prepared outside the spinlock; inside, only
 * comparisons and copies.
 */
void
CountPayloadMismatch(const char *workflow, int workflow_len, const char *key, int key_len)
{
	char		shown[KEY_BYTES];
	char		wf[IDEMGATE_MAX_NAME_BYTES + 1];
	TimestampTz now = GetCurrentTimestamp();
	MismatchSlot *slot = NULL;
	MismatchSlot *oldest = NULL;

	if (Mismatches == NULL)
		return;
	ShownKey(shown, key, key_len);
	if (workflow != NULL)
	{
		workflow_len = pg_mbcliplen(workflow, workflow_len, IDEMGATE_MAX_NAME_BYTES);
		memcpy(wf, workflow, workflow_len);
		wf[workflow_len] = '\0';
	}

	SpinLockAcquire(&Mismatches->lock);
	for (int i = 0; i < IDEMGATE_MISMATCH_SLOTS; i++)
	{
		MismatchSlot *s = &Mismatches->slots[i];

		if (s->dboid == InvalidOid)
		{
			if (oldest == NULL || oldest->dboid != InvalidOid)
				oldest = s;		/* a free slot beats any used one */
			continue;
		}
		if (s->dboid == MyDatabaseId && s->has_workflow == (workflow != NULL) &&
			(workflow == NULL || strcmp(s->workflow, wf) == 0))
		{
			slot = s;
			break;
		}
		if (oldest == NULL || (oldest->dboid != InvalidOid && s->last_at < oldest->last_at))
			oldest = s;
	}
	if (slot == NULL || now - slot->last_at > IDEMGATE_MISMATCH_WINDOW_USECS)
	{
		/* A new episode, in this workflow's slot or in a free (or the oldest) one. */
		if (slot == NULL)
			slot = oldest;
		slot->dboid = MyDatabaseId;
		slot->has_workflow = workflow != NULL;
		strlcpy(slot->workflow, workflow != NULL ? wf : "", sizeof(slot->workflow));
		slot->count = 0;
		slot->first_at = now;
		slot->nkeys = 0;
	}
	slot->count++;
	slot->last_at = now;
	if (slot->nkeys < IDEMGATE_ALERT_FIRST_KEYS)
	{
		bool		seen = false;

		for (int k = 0; k < slot->nkeys && !seen; k++)
			seen = strcmp(slot->keys[k], shown) == 0;
		if (!seen)
			strlcpy(slot->keys[slot->nkeys++], shown, KEY_BYTES);
	}
	SpinLockRelease(&Mismatches->lock);
	SaveMismatches();
}

/*
 * idemgate_payload_mismatches implements payload_mismatches(): one row per
 * workflow of this database with an episode of mismatches since the server
 * started (workflow NULL for runs without one): mismatches, first_at,
 * last_at, first_keys, and firing (the last one is less than
 * IDEMGATE_MISMATCH_WINDOW_USECS old). No rows without the preload.
 */
Datum
idemgate_payload_mismatches(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	MismatchSlot *copy;
	int			n = 0;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	if (Mismatches == NULL)
		return (Datum) 0;

	copy = palloc(sizeof(Mismatches->slots));
	SpinLockAcquire(&Mismatches->lock);
	for (int i = 0; i < IDEMGATE_MISMATCH_SLOTS; i++)
		if (Mismatches->slots[i].dboid == MyDatabaseId)
			copy[n++] = Mismatches->slots[i];
	SpinLockRelease(&Mismatches->lock);

	for (int i = 0; i < n; i++)
	{
		MismatchSlot *s = &copy[i];
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};
		Datum		keys[IDEMGATE_ALERT_FIRST_KEYS];

		values[0] = s->has_workflow ? CStringGetTextDatum(s->workflow) : (Datum) 0;
		nulls[0] = !s->has_workflow;
		values[1] = Int64GetDatum(s->count);
		values[2] = TimestampTzGetDatum(s->first_at);
		values[3] = TimestampTzGetDatum(s->last_at);
		for (int k = 0; k < s->nkeys; k++)
			keys[k] = CStringGetTextDatum(s->keys[k]);
		values[4] = PointerGetDatum(construct_array(keys, s->nkeys, TEXTOID, -1, false,
													TYPALIGN_INT));
		values[5] = BoolGetDatum(now - s->last_at <= IDEMGATE_MISMATCH_WINDOW_USECS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * idemgate_clear_payload_mismatches implements clear_payload_mismatches():
 * forgets this database's counts (the payload_mismatch alert clears), and
 * records who did it and what was forgotten. Returns the number of
 * mismatches forgotten.
 */
Datum
idemgate_clear_payload_mismatches(PG_FUNCTION_ARGS)
{
	int64		cleared = 0;
	int			workflows = 0;
	EventDetails details;

	if (Mismatches != NULL)
	{
		SpinLockAcquire(&Mismatches->lock);
		for (int i = 0; i < IDEMGATE_MISMATCH_SLOTS; i++)
		{
			MismatchSlot *s = &Mismatches->slots[i];

			if (s->dboid != MyDatabaseId)
				continue;
			cleared += s->count;
			workflows++;
			s->dboid = InvalidOid;
		}
		SpinLockRelease(&Mismatches->lock);
		SaveMismatches();
	}

	ConnectSPI();
	DetailsInit(&details);
	DetailsInt(&details, "workflows", workflows);
	DetailsInt(&details, "mismatches", cleared);
	RecordEvent(NULL, NULL, "payload_mismatches_cleared",
				GetUserNameFromId(GetSessionUserId(), false), DetailsFinish(&details));
	SPI_finish();
	PG_RETURN_INT64(cleared);
}
