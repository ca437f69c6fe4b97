/*-------------------------------------------------------------------------
 *
 * src/core/token_log_redaction.c
 *	  Approval tokens out of the server log for every login: an
 *	  emit_log_hook (docs/operations.md, "Approval tokens stay out of the
 *	  server log").
 *
 * Design note. A tool that pastes parameters into the statement text (n8n's
 * Postgres node does) puts the raw token of peek_approval and
 * consume_approval in the log: log_statement's "statement: ...", the
 * "duration: ..." of log_min_duration_statement, an error's "STATEMENT:"
 * line, a bind's "parameters: $1 = ..." or a JSON error's CONTEXT. Role
 * settings cannot prevent it for everyone: they reach neither the members
 * of a group role nor a superuser, and only a superuser may set them. So
 * every message about to be logged whose text, or whose statement, names
 * one of the functions that take a token has every token-shaped run of
 * characters replaced by "[token]" (a token is 43 base64url characters,
 * or 48 with '.' and the bucket on Citus; any run of 32 or more
 * base64url characters is taken for one), and its STATEMENT line is not
 * shown (hide_stmt). Other messages are untouched. The hook is installed
 * when the library is preloaded (a backend that loads it later has logged
 * its first statement already); it costs a search of the message and the
 * query text per logged message.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "tcop/tcopprot.h"
#include "utils/elog.h"

#include "core/token_log_redaction.h"

static emit_log_hook_type prev_emit_log_hook = NULL;

/* The functions whose arguments may hold a token. */
static const char *const token_functions[] = {
	"consume_approval", "peek_approval", "hash_token", NULL
};

/* NamesTokenFunction: s mentions a function that takes a token. */
static bool
NamesTokenFunction(const char *s)
{
	if (s == NULL)
		return false;
	for (int i = 0; token_functions[i] != NULL; i++)
		if (strstr(s, token_functions[i]) != NULL)
			return true;
	return false;
}

static bool
IsTokenChar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_';
}

/*
 * Redacted returns s with every run of 32 or more base64url characters
 * (and a '.' with up to 4 hex digits after one) replaced by "[token]", or
 * s itself when there is none. palloc'd in the current (error) context.
 */
static char *
Redacted(char *s)
{
	StringInfoData out;
	const char *p = s;
	bool		changed = false;

	if (s == NULL)
		return s;
	initStringInfo(&out);
	while (*p)
	{
		const char *run = p;

		while (IsTokenChar(*p))
			p++;
		if (p - run >= 32)
		{
			if (*p == '.')
			{
				p++;
				while (((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) && p - run < 64)
					p++;
			}
			appendStringInfoString(&out, "[token]");
			changed = true;
			continue;
		}
		appendBinaryStringInfo(&out, run, p - run);
		if (*p)
			appendStringInfoChar(&out, *p++);
	}
	if (!changed)
	{
		pfree(out.data);
		return s;
	}
	return out.data;
}

/* RedactTokens is the emit_log_hook. */
static void
RedactTokens(ErrorData *edata)
{
	if (edata->output_to_server &&
		(NamesTokenFunction(debug_query_string) || NamesTokenFunction(edata->message) ||
		 NamesTokenFunction(edata->context)))
	{
		edata->hide_stmt = true;
		edata->message = Redacted(edata->message);
		edata->detail = Redacted(edata->detail);
		edata->detail_log = Redacted(edata->detail_log);
		edata->context = Redacted(edata->context);
		edata->internalquery = Redacted(edata->internalquery);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/* InstallTokenLogRedaction installs the hook; from _PG_init. */
void
InstallTokenLogRedaction(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = RedactTokens;
}
