/*-------------------------------------------------------------------------
 *
 * src/policy/secrets.c
 *	  Secrets outside the database (README.md, "Secrets"): an endpoint's
 *	  header value may name a secret, "Bearer ${secret:crm_token}", whose
 *	  value lives only in the file idemgate.secrets_file names (a JSON
 *	  object of strings), never in a table, a dump, WAL, an event or a log
 *	  line. register_endpoint refuses a name the file lacks (22023); the
 *	  dispatcher puts the value in the request at send time, and holds an
 *	  effect whose secret is missing (IDEMGATE_SECRET_HOLD_SECS, attempt not
 *	  counted; the alert secret_missing names the endpoint meanwhile).
 *
 * Design note. The file must be a regular file outside the data directory
 * (a base backup copies that), owned by the server's user, mode 0600 or
 * stricter (no group or other bits). It is read by its own JSON parser
 * callbacks, which never raise: PostgreSQL's jsonb input would quote the
 * offending text, a secret, in its error. A process keeps what it read
 * and reads the file again when its identity or modification time
 * changes, so a reload (or any edit) takes effect at the next send, and
 * a file being rewritten is at worst unreadable for one look (its
 * effects wait IDEMGATE_SECRET_HOLD_SECS). Messages name the file, a
 * secret's name or a problem, never a value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonapi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "core/guc.h"
#include "core/idemgate_limits.h"
#include "core/json_walk.h"
#include "policy/secrets.h"

#define SECRET_OPEN "${secret:"
#define SECRET_MAX_FILE_BYTES (1024 * 1024)
#define SECRET_MAX_NAME_BYTES 64

typedef struct Secret
{
	char	   *name;
	char	   *value;
} Secret;

/* What this process last read, in SecretsContext. */
static MemoryContext SecretsContext = NULL;
static char *read_path = NULL;
static struct stat read_stat;
static Secret *secrets = NULL;
static int	n_secrets = 0;
static char *read_problem = NULL;	/* why the file cannot be used, or NULL */

/* --------------------------------------------------------- the file */

typedef struct SecretsParse
{
	JsonLexContext *lex;
	char	   *field;			/* the top-level field being read */
	bool		bad;			/* not an object of strings */
	List	   *pairs;			/* Secret *, in SecretsContext */
} SecretsParse;

static JSON_ACTION_RESULT
SecretField(void *state, char *fname, bool isnull)
{
	SecretsParse *p = state;

	if (p->lex->lex_level == 1)
		p->field = fname;
	JSON_ACTION_DONE;
}

static JSON_ACTION_RESULT
SecretScalar(void *state, char *token, JsonTokenType type)
{
	SecretsParse *p = state;

	if (p->lex->lex_level == 0 || type != JSON_TOKEN_STRING || p->field == NULL)
		p->bad = true;
	else if (p->lex->lex_level == 1)
	{
		Secret	   *s = MemoryContextAlloc(SecretsContext, sizeof(Secret));

		s->name = MemoryContextStrdup(SecretsContext, p->field);
		s->value = MemoryContextStrdup(SecretsContext, token);
		p->pairs = lappend(p->pairs, s);
		p->field = NULL;
	}
	JSON_ACTION_DONE;
}

static JSON_ACTION_RESULT
SecretNested(void *state)
{
	SecretsParse *p = state;

	if (p->lex->lex_level > 0)
		p->bad = true;			/* a value that is an object or array */
	JSON_ACTION_DONE;
}

static JSON_ACTION_RESULT
SecretArray(void *state)
{
	((SecretsParse *) state)->bad = true;
	JSON_ACTION_DONE;
}

/* InsideDataDirectory tells whether path resolves to a file under DataDir. */
static bool
InsideDataDirectory(const char *path)
{
	/* realpath's own buffers (PATH_MAX, which a fixed one must match) */
	char	   *real_file = realpath(path, NULL);
	char	   *real_data = DataDir ? realpath(DataDir, NULL) : NULL;
	bool		inside = false;

	if (real_file != NULL && real_data != NULL)
	{
		size_t		n = strlen(real_data);

		inside = strncmp(real_file, real_data, n) == 0 &&
			(real_file[n] == '/' || real_file[n] == '\0');
	}
	free(real_file);
	free(real_data);
	return inside;
}

/*
 * LoadSecrets (re)reads the file when it changed; sets read_problem when
 * it cannot be used. Never raises for anything about the file.
 */
static void
LoadSecrets(void)
{
	const char *path = IdemgateSecretsFile;
	struct stat st;
	FILE	   *f;
	char	   *buf;
	size_t		len;
	SecretsParse p;
	MemoryContext old;
	ListCell   *lc;
	int			stat_errno = 0;

	if (SecretsContext == NULL)
		SecretsContext = AllocSetContextCreate(TopMemoryContext, "idemgate secrets",
											   ALLOCSET_SMALL_SIZES);
	if (path == NULL || path[0] == '\0')
	{
		MemoryContextReset(SecretsContext);
		read_path = NULL;
		secrets = NULL;
		n_secrets = 0;
		read_problem = MemoryContextStrdup(SecretsContext, "idemgate.secrets_file is not set");
		return;
	}
	if (stat(path, &st) != 0)
	{
		stat_errno = errno;
		memset(&st, 0, sizeof(st));
	}
	if (read_path != NULL && strcmp(read_path, path) == 0 && st.st_ino != 0 &&
		st.st_ino == read_stat.st_ino && st.st_dev == read_stat.st_dev &&
		st.st_mtim.tv_sec == read_stat.st_mtim.tv_sec &&
		st.st_mtim.tv_nsec == read_stat.st_mtim.tv_nsec && st.st_size == read_stat.st_size &&
		st.st_mode == read_stat.st_mode && st.st_uid == read_stat.st_uid)
		return;					/* unchanged */

	MemoryContextReset(SecretsContext);
	secrets = NULL;
	n_secrets = 0;
	read_path = MemoryContextStrdup(SecretsContext, path);
	read_stat = st;
	read_problem = NULL;
	if (st.st_ino == 0)
		read_problem = psprintf("idemgate.secrets_file \"%s\" cannot be read: %s", path,
								strerror(stat_errno));
	else if (!S_ISREG(st.st_mode))
		read_problem = psprintf("idemgate.secrets_file \"%s\" is not a regular file", path);
	else if (st.st_uid != geteuid())
		read_problem = psprintf("idemgate.secrets_file \"%s\" is not owned by the server's user",
								path);
	else if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
		read_problem = psprintf("idemgate.secrets_file \"%s\" is readable or writable by others "
								"(its mode must be 0600 or stricter)", path);
	else if (InsideDataDirectory(path))
		read_problem = psprintf("idemgate.secrets_file \"%s\" is inside the data directory (base "
								"backups copy it)", path);
	else if (st.st_size > SECRET_MAX_FILE_BYTES)
		read_problem = psprintf("idemgate.secrets_file \"%s\" is larger than %d bytes", path,
								SECRET_MAX_FILE_BYTES);
	if (read_problem != NULL)
	{
		read_problem = MemoryContextStrdup(SecretsContext, read_problem);
		return;
	}

	f = AllocateFile(path, "r");
	if (f == NULL)
	{
		read_problem = MemoryContextStrdup(SecretsContext,
										   psprintf("idemgate.secrets_file \"%s\" "
													"cannot be read: %m", path));
		return;
	}
	buf = MemoryContextAllocZero(SecretsContext, st.st_size + 1);
	len = fread(buf, 1, st.st_size, f);
	FreeFile(f);

	memset(&p, 0, sizeof(p));
	old = MemoryContextSwitchTo(SecretsContext);
	if (len != (size_t) st.st_size || !pg_verifymbstr(buf, (int) len, true) ||
		!WalkJson(buf, len, &p, &p.lex, SecretField, SecretScalar, SecretNested, SecretArray))
		p.bad = true;
	MemoryContextSwitchTo(old);
	/* The file's text is not kept: only the parsed pairs. */
	explicit_bzero(buf, len);
	if (p.bad)
	{
		read_problem = MemoryContextStrdup(SecretsContext,
										   psprintf("idemgate.secrets_file \"%s\" is not a JSON "
													"object of string values", path));
		return;
	}
	secrets = MemoryContextAlloc(SecretsContext, sizeof(Secret) * Max(list_length(p.pairs), 1));
	foreach(lc, p.pairs)
		secrets[n_secrets++] = *(Secret *) lfirst(lc);
}

/* SecretValue finds name's value after LoadSecrets, or NULL. */
static const char *
SecretValue(const char *name, int len)
{
	for (int i = n_secrets - 1; i >= 0; i--)	/* the last of duplicate names wins */
		if ((int) strlen(secrets[i].name) == len && strncmp(secrets[i].name, name, len) == 0)
			return secrets[i].value;
	return NULL;
}

/*
 * NextReference finds the next ${secret:NAME} at or after s: returns its
 * start and sets *name, *name_len and *end (after the '}'); NULL when none.
 * A malformed one (no '}', an empty or bad name) sets *malformed.
 */
static const char *
NextReference(const char *s, const char **name, int *name_len, const char **end, bool *malformed)
{
	const char *at = strstr(s, SECRET_OPEN);
	const char *n;
	const char *close;

	*malformed = false;
	if (at == NULL)
		return NULL;
	n = at + strlen(SECRET_OPEN);
	close = strchr(n, '}');
	if (close == NULL || close == n || close - n > SECRET_MAX_NAME_BYTES)
	{
		*malformed = true;
		return at;
	}
	for (const char *c = n; c < close; c++)
		if (!(isalnum((unsigned char) *c) || *c == '_' || *c == '-' || *c == '.'))
		{
			*malformed = true;
			return at;
		}
	*name = n;
	*name_len = (int) (close - n);
	*end = close + 1;
	return at;
}

/* One ${secret:NAME} of a header value (HeaderReferences). */
typedef struct SecretRef
{
	char	   *header;
	char	   *name;			/* NULL when malformed */
} SecretRef;

/*
 * HeaderReferences lists the ${secret:NAME} of every value of headers (an
 * object of strings), in order; a malformed one ends its value's list.
 */
static List *
HeaderReferences(Jsonb *headers)
{
	JsonbIterator *it = JsonbIteratorInit(&headers->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *header = NULL;
	List	   *refs = NIL;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *s;
		const char *name;
		const char *end;
		int			name_len;
		bool		malformed;
		char	   *value;

		if (tok == WJB_KEY)
			header = pnstrdup(v.val.string.val, v.val.string.len);
		if (tok != WJB_VALUE || v.type != jbvString)
			continue;
		value = pnstrdup(v.val.string.val, v.val.string.len);
		for (s = value; (s = NextReference(s, &name, &name_len, &end, &malformed)) != NULL; s = end)
		{
			SecretRef  *r = palloc(sizeof(SecretRef));

			r->header = header;
			r->name = malformed ? NULL : pnstrdup(name, name_len);
			refs = lappend(refs, r);
			if (malformed)
				break;
		}
	}
	return refs;
}

/* CheckSecretReferences: see secrets.h. */
void
CheckSecretReferences(Jsonb *headers)
{
	List	   *refs = HeaderReferences(headers);
	ListCell   *lc;

	if (refs != NIL)
		LoadSecrets();
	foreach(lc, refs)
	{
		SecretRef  *r = lfirst(lc);

		if (r->name == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"headers\": header \"%s\" has a malformed secret reference",
							r->header),
					 errhint("Write ${secret:NAME}, NAME of letters, digits, '_', "
							 "'-' and '.' (at most %d).",
							 SECRET_MAX_NAME_BYTES)));
		if (read_problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"headers\": header \"%s\" names secret \"%s\", but %s",
							r->header, r->name, read_problem),
					 errhint("Put the secrets in a file outside the data directory, "
							 "owned by the server's user with mode 0600, "
							 "name it in idemgate.secrets_file and reload.")));
		if (SecretValue(r->name, strlen(r->name)) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"headers\": header \"%s\" names secret \"%s\", "
							"which idemgate.secrets_file lacks",
							r->header, r->name),
					 errhint("Add it to the file (a JSON object of strings) and reload, "
							 "then register the endpoint.")));
	}
}

/* ResolveSecrets: see secrets.h. */
char *
ResolveSecrets(const char *line, char **missing)
{
	StringInfoData out;
	const char *s = line;
	const char *at;
	const char *name;
	const char *end;
	int			name_len;
	bool		malformed;

	*missing = NULL;
	if (strstr(line, SECRET_OPEN) == NULL)
		return unconstify(char *, line);
	LoadSecrets();
	initStringInfo(&out);
	while ((at = NextReference(s, &name, &name_len, &end, &malformed)) != NULL)
	{
		const char *value = malformed || read_problem != NULL ? NULL : SecretValue(name, name_len);

		if (value == NULL)
		{
			*missing = malformed ? pstrdup("(malformed)") : pnstrdup(name, name_len);
			explicit_bzero(out.data, out.len);
			pfree(out.data);
			return NULL;
		}
		appendBinaryStringInfo(&out, s, at - s);
		appendStringInfoString(&out, value);
		s = end;
	}
	appendStringInfoString(&out, s);
	return out.data;
}

/* SecretsProblem: see secrets.h. */
const char *
SecretsProblem(void)
{
	return read_problem;
}

/* ------------------------------------------------------ the alert */

PG_FUNCTION_INFO_V1(idemgate_missing_secrets);

/*
 * idemgate_missing_secrets implements missing_secrets(headers jsonb): the
 * names of the secrets the header values name that the file lacks (or all
 * of them when the file cannot be used), for the secret_missing alert.
 */
Datum
idemgate_missing_secrets(PG_FUNCTION_ARGS)
{
	Jsonb	   *headers = PG_GETARG_JSONB_P(0);
	List	   *refs;
	ListCell   *lc;
	ArrayBuildState *names = NULL;

	if (!JB_ROOT_IS_OBJECT(headers) || JB_ROOT_IS_SCALAR(headers))
		PG_RETURN_NULL();
	refs = HeaderReferences(headers);
	if (refs != NIL)
		LoadSecrets();
	foreach(lc, refs)
	{
		SecretRef  *r = lfirst(lc);

		if (r->name == NULL ||
			(read_problem == NULL && SecretValue(r->name, strlen(r->name)) != NULL))
			continue;			/* malformed (register_endpoint refuses those) or there */
		names = accumArrayResult(names, CStringGetTextDatum(r->name),
								 false, TEXTOID, CurrentMemoryContext);
	}
	if (names == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(makeArrayResult(names, CurrentMemoryContext));
}
