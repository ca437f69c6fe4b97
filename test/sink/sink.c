/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Fault-injecting loopback HTTP/1.1 sink for idemgate tests and benchmarks.
 *
 * The dispatcher POSTs effects to their targets with libcurl. This program
 * plays the target: it answers by path (/ok, /status/<code>, /delay/<ms>,
 * /drop, /reset, /partial, /seq/<codes>, /mix/<weighted steps>, /outage/<ms>,
 * /windows/<period>,<down>), writes one
 * JSON line per request to a log,
 * and keeps per-Idempotency-Key counters served at GET /__stats. See
 * test/sink/README.md for the paths and options.
 *
 * Design. One thread, one level-triggered epoll set, non-blocking sockets,
 * libc only. Each connection is in one of four states:
 *
 *   READING  parse complete requests from the input buffer and answer them
 *            in order (keep-alive and pipelining); write the output buffer.
 *   DELAYED  a /delay or /seq "delayMS" request is parked in the timer heap
 *            with its response and log line prepared. Later requests on the
 *            connection wait behind it so responses stay in order. EOF or an
 *            error while parked logs the request with status 0.
 *   CLOSING  no more requests are read; once the output is written the
 *            connection is reset (/reset) or moves to LINGER (/drop, and
 *            /partial after its cut-off response).
 *   LINGER   our write side is shut down (the peer sees a FIN, after our
 *            response if there was one); input is read and discarded until
 *            EOF or a one-second timer, so the peer never gets an RST for
 *            data it sent before we closed.
 *
 * Log lines are built in memory and written with write(2) at most every
 * LOG_FLUSH_MS (immediately when the sink has been idle), so a test reading
 * the log while the sink runs sees each request promptly.
 *
 * Bounded: the sink exits 0 after --max-seconds (default 600), after
 * --max-requests logged requests, or on SIGTERM/SIGINT, flushing the log.
 *
 * IDENTIFICATION
 *	  test/sink/sink.c
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADER_BYTES	(16 * 1024)		/* request line + headers */
#define MAX_BODY_BYTES		(1024 * 1024)	/* decoded body */
#define MAX_INPUT_BYTES		(MAX_HEADER_BYTES + MAX_BODY_BYTES + 64 * 1024)
#define MAX_HEADER_LINES	100
#define MAX_X_HEADERS		32
#define MAX_OUTPUT_PENDING	(1024 * 1024)	/* stop reading past this */
#define MAX_DELAY_MS		600000
#define MAX_PATHS_TRACKED	4096
#define LINGER_MS			1000
#define PARTIAL_LENGTH		100		/* Content-Length a /partial announces */
#define PARTIAL_SENT		10		/* body bytes it sends before the FIN */
#define DRAIN_MS			2000
#define LOG_FLUSH_MS		10
#define LOG_FLUSH_BYTES		(1024 * 1024)
#define ACCEPT_PAUSE_MS		100
#define MAX_EVENTS			256

/* Growable byte buffer. */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

/* What an epoll registration points at; first member of Conn. */
typedef enum WatchKind
{
	WATCH_LISTENER,
	WATCH_SIGNAL,
	WATCH_CONN
} WatchKind;

typedef struct Watch
{
	WatchKind	kind;
	int			fd;
} Watch;

typedef enum ConnState
{
	CS_READING,
	CS_DELAYED,
	CS_CLOSING,
	CS_LINGER
} ConnState;

/* What to do with a connection once its output is written. */
typedef enum After
{
	AFTER_NONE,					/* keep alive */
	AFTER_LINGER,				/* FIN, discard input, close */
	AFTER_RESET					/* close with RST */
} After;

typedef struct Conn
{
	Watch		w;				/* must stay first */
	ConnState	state;
	After		after;			/* valid in CS_CLOSING */
	bool		peer_eof;		/* read returned 0 */
	bool		sent_continue;	/* 100 Continue sent for current request */
	bool		rx_valid;		/* rx holds the current request's first byte */
	struct timespec rx;			/* kernel receive time (SO_TIMESTAMPNS) */
	uint32_t	events;			/* current epoll interest */
	Buf			in;
	size_t		in_off;			/* start of unparsed input */
	Buf			out;
	size_t		out_off;		/* start of unwritten output */
	int64_t		deadline;		/* monotonic ms, while in the timer heap */
	int			heap_idx;		/* -1 when not in the timer heap */
	/* The parked request of a DELAYED connection. */
	Buf			pend_log;		/* log line up to "status" */
	Buf			pend_resp;		/* complete response */
	Buf			pend_key;		/* Idempotency-Key, if pend_has_key */
	bool		pend_has_key;
	int			pend_status;
	After		pend_after;
	struct Conn *prev;
	struct Conn *next;
} Conn;

/* One slot of a string-keyed open-addressing hash table. */
typedef struct StrEntry
{
	char	   *key;			/* NULL when the slot is free */
	uint64_t	hash;
	uint32_t	key_len;
	uint32_t	count;			/* requests seen */
	uint32_t	seq;			/* /seq requests seen (keys only) */
	uint32_t	ok;				/* 2xx responses sent (keys only) */
} StrEntry;

typedef struct StrMap
{
	StrEntry   *slots;
	size_t		cap;			/* power of two, or 0 */
	size_t		len;
} StrMap;

typedef struct Header
{
	const char *name;
	size_t		name_len;
	const char *value;
	size_t		value_len;
} Header;

/* A parsed request; pointers refer to the connection's input buffer. */
typedef struct Request
{
	const char *method;			/* NULL if the request line was bad */
	size_t		method_len;
	const char *target;			/* as sent: path?query */
	size_t		target_len;
	const char *path;			/* without query (and scheme/authority) */
	size_t		path_len;
	const char *query;			/* after '?', or NULL */
	size_t		query_len;
	int			minor;			/* HTTP/1.minor */
	bool		keep_alive;
	bool		expect_continue;
	bool		chunked;
	bool		has_length;
	size_t		content_length;
	const char *key;			/* Idempotency-Key value, or NULL */
	size_t		key_len;
	const char *ctype;			/* Content-Type value, or NULL */
	size_t		ctype_len;
	const char *body;
	size_t		body_len;
	size_t		head_len;		/* bytes through the blank line */
	size_t		total_len;		/* head plus encoded body */
	int			nxhdr;
	Header		xhdr[MAX_X_HEADERS];	/* headers named X-*; keep last */
} Request;

typedef enum ParseResult
{
	PARSE_OK,
	PARSE_MORE,
	PARSE_BAD,					/* 400 */
	PARSE_HEAD_TOO_LARGE,		/* 431 */
	PARSE_BODY_TOO_LARGE,		/* 413 */
	PARSE_TE_UNSUPPORTED		/* 501 */
} ParseResult;

/* Query-string options that shape a response. */
typedef struct Options
{
	char		field[128];		/* name of the id field; "id" by default */
	bool		noid;
	bool		has_retry_after;
	char		retry_after[128];
	bool		has_retry_after_date;
	long		retry_after_date;
	bool		has_location;
	char		location[2048];
	char		error_body[256];	/* non-2xx body, repeated error_repeat times */
	long		error_repeat;
} Options;

typedef enum ActionKind
{
	ACT_RESPOND,
	ACT_DELAY,
	ACT_DROP,
	ACT_RESET,
	ACT_PARTIAL
} ActionKind;

typedef struct Action
{
	ActionKind	kind;
	int			code;
	int			delay_ms;
} Action;

typedef struct Server
{
	/* command line */
	const char *host;
	int			port;
	const char *log_path;
	const char *port_file;
	double		max_seconds;
	uint64_t	max_requests;	/* 0 = no limit */
	bool		quiet;

	/* event loop */
	int			epfd;
	Watch		listener;
	Watch		sig;
	Conn	   *conns;
	int			nconns;
	Conn	  **heap;			/* timer min-heap on Conn.deadline */
	int			heap_len;
	int			heap_cap;
	int64_t		start_ms;
	int64_t		end_ms;
	int64_t		accept_resume;	/* nonzero while accept is paused */
	bool		draining;
	int64_t		drain_deadline;
	bool		stop;
	const char *stop_reason;

	/* log */
	int			log_fd;
	Buf			log;
	int64_t		last_flush;
	bool		log_failed;

	/* scratch space reused per request */
	Buf			line;			/* log line prefix, stats JSON */
	Buf			body;			/* response body */
	Buf			chunked;		/* decoded chunked request body */

	/* counters */
	uint64_t	seq;			/* last request number handed out */
	uint64_t	handled;		/* requests logged since start */
	uint64_t	requests;		/* since the last /__reset_stats */
	uint64_t	by_status[600];
	uint64_t	seq_nokey;		/* /seq requests without a key */
	uint64_t	outage_start_ms;	/* first /outage request (monotonic ms), 0 = none yet */
	uint64_t	rng;			/* xorshift64 state for /mix (--seed) */
	StrMap		paths;
	StrMap		keys;
} Server;

static void CloseConn(Server *srv, Conn *c);
static void ProcessInput(Server *srv, Conn *c);
static bool FlushOutput(Server *srv, Conn *c);
static void UpdateInterest(Server *srv, Conn *c);


/* ---------------------------------------------------------------- utils */

/* Die prints a message with errno text and exits 1. */
static void
Die(const char *what)
{
	fprintf(stderr, "sink: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* MonoMs returns CLOCK_MONOTONIC in milliseconds. */
static int64_t
MonoMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* BufReserve makes room for extra more bytes. */
static void
BufReserve(Buf *b, size_t extra)
{
	size_t		cap;
	char	   *data;

	if (b->len + extra <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra)
		cap *= 2;
	data = realloc(b->data, cap);
	if (data == NULL)
		Die("out of memory");
	b->data = data;
	b->cap = cap;
}

/* BufAppend appends n bytes. */
static void
BufAppend(Buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	BufReserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* BufPuts appends a C string. */
static void
BufPuts(Buf *b, const char *s)
{
	BufAppend(b, s, strlen(s));
}

/* BufPrintf appends printf-formatted text. */
static void __attribute__((format(printf, 2, 3)))
BufPrintf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	BufReserve(b, 128);
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n >= b->cap - b->len)
	{
		BufReserve(b, (size_t) n + 1);
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t) n;
}

/* BufFree releases a buffer. */
static void
BufFree(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Utf8Len returns the length of the valid UTF-8 sequence at p, or 0. */
static size_t
Utf8Len(const unsigned char *p, size_t n)
{
	uint32_t	cp;
	uint32_t	min;
	size_t		len;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xE0) == 0xC0)
	{
		len = 2;
		cp = p[0] & 0x1F;
		min = 0x80;
	}
	else if ((p[0] & 0xF0) == 0xE0)
	{
		len = 3;
		cp = p[0] & 0x0F;
		min = 0x800;
	}
	else if ((p[0] & 0xF8) == 0xF0)
	{
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	}
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++)
	{
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/*
 * BufJsonString appends s as a quoted JSON string. Invalid UTF-8 bytes are
 * written as \u00XX so the log stays valid UTF-8.
 */
static void
BufJsonString(Buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *) s;
	char	   *o;

	BufReserve(b, n * 6 + 2);
	o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n;)
	{
		unsigned char ch = p[i];
		size_t		l = 0;

		if (ch == '"' || ch == '\\')
		{
			*o++ = '\\';
			*o++ = (char) ch;
			i++;
		}
		else if (ch == '\n' || ch == '\r' || ch == '\t')
		{
			*o++ = '\\';
			*o++ = ch == '\n' ? 'n' : ch == '\r' ? 'r' : 't';
			i++;
		}
		else if (ch < 0x20 || ch == 0x7f || (l = Utf8Len(p + i, n - i)) == 0)
		{
			memcpy(o, "\\u00", 4);
			o[4] = hex[ch >> 4];
			o[5] = hex[ch & 15];
			o += 6;
			i++;
		}
		else
		{
			memcpy(o, p + i, l);
			o += l;
			i += l;
		}
	}
	*o++ = '"';
	b->len = (size_t) (o - b->data);
}

/* BufJsonStringOrNull appends s as a JSON string, or null when s is NULL. */
static void
BufJsonStringOrNull(Buf *b, const char *s, size_t n)
{
	if (s == NULL)
		BufPuts(b, "null");
	else
		BufJsonString(b, s, n);
}

/* MemEq reports whether s[0..n) equals the C string lit. */
static bool
MemEq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* MemCaseEq is MemEq ignoring ASCII case. */
static bool
MemCaseEq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/* HasPrefix reports whether s[0..n) starts with lit. */
static bool
HasPrefix(const char *s, size_t n, const char *lit)
{
	size_t		l = strlen(lit);

	return n >= l && memcmp(s, lit, l) == 0;
}

/* ParseUint parses all of s[0..n) as a decimal number no larger than max. */
static bool
ParseUint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0;

	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}


/* ------------------------------------------------------------ JSON check */

/*
 * A minimal JSON validator that copies the value it accepts, minus
 * insignificant whitespace, so a valid body can be embedded in a log line
 * as a JSON value without breaking the one-line-per-request format.
 */
typedef struct JsonCheck
{
	const unsigned char *p;
	size_t		n;
	size_t		i;
	Buf		   *out;
} JsonCheck;

static bool JsonValue(JsonCheck *j, int depth);

/* JsonSkipSpace skips JSON whitespace. */
static void
JsonSkipSpace(JsonCheck *j)
{
	while (j->i < j->n && (j->p[j->i] == ' ' || j->p[j->i] == '\t' ||
						   j->p[j->i] == '\n' || j->p[j->i] == '\r'))
		j->i++;
}

/* JsonString accepts one string token. */
static bool
JsonString(JsonCheck *j)
{
	size_t		start = j->i;

	j->i++;						/* opening quote */
	while (j->i < j->n)
	{
		unsigned char ch = j->p[j->i];

		if (ch == '"')
		{
			j->i++;
			BufAppend(j->out, j->p + start, j->i - start);
			return true;
		}
		if (ch < 0x20)
			return false;
		if (ch == '\\')
		{
			if (++j->i >= j->n)
				return false;
			ch = j->p[j->i];
			if (ch == 'u')
			{
				if (j->i + 4 >= j->n)
					return false;
				for (int k = 1; k <= 4; k++)
					if (!isxdigit(j->p[j->i + k]))
						return false;
				j->i += 5;
			}
			else if (ch != '\0' && strchr("\"\\/bfnrt", ch))
				j->i++;
			else
				return false;
		}
		else if (ch >= 0x80)
		{
			size_t		l = Utf8Len(j->p + j->i, j->n - j->i);

			if (l == 0)
				return false;
			j->i += l;
		}
		else
			j->i++;
	}
	return false;
}

/* JsonDigits accepts one or more digits. */
static bool
JsonDigits(JsonCheck *j)
{
	size_t		start = j->i;

	while (j->i < j->n && j->p[j->i] >= '0' && j->p[j->i] <= '9')
		j->i++;
	return j->i > start;
}

/* JsonNumber accepts one number token. */
static bool
JsonNumber(JsonCheck *j)
{
	size_t		start = j->i;

	if (j->p[j->i] == '-')
		j->i++;
	if (j->i < j->n && j->p[j->i] == '0')
		j->i++;
	else if (!JsonDigits(j))
		return false;
	if (j->i < j->n && j->p[j->i] == '.')
	{
		j->i++;
		if (!JsonDigits(j))
			return false;
	}
	if (j->i < j->n && (j->p[j->i] == 'e' || j->p[j->i] == 'E'))
	{
		j->i++;
		if (j->i < j->n && (j->p[j->i] == '+' || j->p[j->i] == '-'))
			j->i++;
		if (!JsonDigits(j))
			return false;
	}
	BufAppend(j->out, j->p + start, j->i - start);
	return true;
}

/* JsonLiteral accepts the word lit. */
static bool
JsonLiteral(JsonCheck *j, const char *lit)
{
	size_t		l = strlen(lit);

	if (j->n - j->i < l || memcmp(j->p + j->i, lit, l) != 0)
		return false;
	j->i += l;
	BufAppend(j->out, lit, l);
	return true;
}

/* JsonContainer accepts an object or array. */
static bool
JsonContainer(JsonCheck *j, int depth)
{
	char		close = j->p[j->i] == '{' ? '}' : ']';
	bool		object = close == '}';

	BufAppend(j->out, j->p + j->i, 1);
	j->i++;
	JsonSkipSpace(j);
	if (j->i < j->n && j->p[j->i] == (unsigned char) close)
	{
		j->i++;
		BufAppend(j->out, &close, 1);
		return true;
	}
	for (;;)
	{
		JsonSkipSpace(j);
		if (object)
		{
			if (j->i >= j->n || j->p[j->i] != '"' || !JsonString(j))
				return false;
			JsonSkipSpace(j);
			if (j->i >= j->n || j->p[j->i] != ':')
				return false;
			j->i++;
			BufAppend(j->out, ":", 1);
		}
		if (!JsonValue(j, depth + 1))
			return false;
		JsonSkipSpace(j);
		if (j->i >= j->n)
			return false;
		if (j->p[j->i] == ',')
		{
			j->i++;
			BufAppend(j->out, ",", 1);
			continue;
		}
		if (j->p[j->i] != (unsigned char) close)
			return false;
		j->i++;
		BufAppend(j->out, &close, 1);
		return true;
	}
}

/* JsonValue accepts any JSON value, nested at most 64 deep. */
static bool
JsonValue(JsonCheck *j, int depth)
{
	if (depth > 64)
		return false;
	JsonSkipSpace(j);
	if (j->i >= j->n)
		return false;
	switch (j->p[j->i])
	{
		case '{':
		case '[':
			return JsonContainer(j, depth);
		case '"':
			return JsonString(j);
		case 't':
			return JsonLiteral(j, "true");
		case 'f':
			return JsonLiteral(j, "false");
		case 'n':
			return JsonLiteral(j, "null");
		default:
			return JsonNumber(j);
	}
}

/*
 * BufJsonBody appends a request body: null when empty, the (minified) JSON
 * value when the body is valid JSON, else the body as a JSON string.
 */
static void
BufJsonBody(Buf *b, const char *body, size_t n)
{
	JsonCheck	j = {(const unsigned char *) body, n, 0, b};
	size_t		mark = b->len;

	if (n == 0)
	{
		BufPuts(b, "null");
		return;
	}
	if (JsonValue(&j, 0))
	{
		JsonSkipSpace(&j);
		if (j.i == n)
			return;
	}
	b->len = mark;
	BufJsonString(b, body, n);
}


/* ------------------------------------------------------------ hash table */

/* HashBytes is 64-bit FNV-1a. */
static uint64_t
HashBytes(const char *s, size_t n)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* StrMapSlot finds the slot for key: its entry, or the free slot for it. */
static StrEntry *
StrMapSlot(StrMap *m, const char *key, size_t n, uint64_t h)
{
	size_t		mask = m->cap - 1;
	size_t		i = (size_t) h & mask;

	for (;;)
	{
		StrEntry   *e = &m->slots[i];

		if (e->key == NULL ||
			(e->hash == h && e->key_len == n && memcmp(e->key, key, n) == 0))
			return e;
		i = (i + 1) & mask;
	}
}

/* StrMapGrow doubles the table. */
static void
StrMapGrow(StrMap *m)
{
	StrMap		bigger;

	bigger.cap = m->cap ? m->cap * 2 : 64;
	bigger.len = m->len;
	bigger.slots = calloc(bigger.cap, sizeof(StrEntry));
	if (bigger.slots == NULL)
		Die("out of memory");
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key != NULL)
			*StrMapSlot(&bigger, m->slots[i].key, m->slots[i].key_len,
						m->slots[i].hash) = m->slots[i];
	free(m->slots);
	*m = bigger;
}

/*
 * StrMapGet returns the entry for key, creating it when create is set
 * (else NULL when absent). The pointer is valid until the next insert.
 */
static StrEntry *
StrMapGet(StrMap *m, const char *key, size_t n, bool create)
{
	uint64_t	h = HashBytes(key, n);
	StrEntry   *e;

	if (m->cap == 0)
	{
		if (!create)
			return NULL;
		StrMapGrow(m);
	}
	e = StrMapSlot(m, key, n, h);
	if (e->key != NULL)
		return e;
	if (!create)
		return NULL;
	if ((m->len + 1) * 2 > m->cap)
	{
		StrMapGrow(m);
		e = StrMapSlot(m, key, n, h);
	}
	e->key = malloc(n + 1);
	if (e->key == NULL)
		Die("out of memory");
	memcpy(e->key, key, n);
	e->key[n] = '\0';
	e->key_len = (uint32_t) n;
	e->hash = h;
	m->len++;
	return e;
}

/* StrMapClear frees every entry. */
static void
StrMapClear(StrMap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}


/* ----------------------------------------------------------- timer heap */

/* HeapSet puts c at heap position i. */
static void
HeapSet(Server *srv, int i, Conn *c)
{
	srv->heap[i] = c;
	c->heap_idx = i;
}

/* HeapUp restores heap order from position i towards the root. */
static void
HeapUp(Server *srv, int i)
{
	Conn	   *c = srv->heap[i];

	while (i > 0)
	{
		int			parent = (i - 1) / 2;

		if (srv->heap[parent]->deadline <= c->deadline)
			break;
		HeapSet(srv, i, srv->heap[parent]);
		i = parent;
	}
	HeapSet(srv, i, c);
}

/* HeapDown restores heap order from position i towards the leaves. */
static void
HeapDown(Server *srv, int i)
{
	Conn	   *c = srv->heap[i];

	for (;;)
	{
		int			child = 2 * i + 1;

		if (child >= srv->heap_len)
			break;
		if (child + 1 < srv->heap_len &&
			srv->heap[child + 1]->deadline < srv->heap[child]->deadline)
			child++;
		if (c->deadline <= srv->heap[child]->deadline)
			break;
		HeapSet(srv, i, srv->heap[child]);
		i = child;
	}
	HeapSet(srv, i, c);
}

/* HeapPush schedules c at c->deadline. */
static void
HeapPush(Server *srv, Conn *c)
{
	if (srv->heap_len == srv->heap_cap)
	{
		int			cap = srv->heap_cap ? srv->heap_cap * 2 : 64;
		Conn	  **heap = realloc(srv->heap, (size_t) cap * sizeof(Conn *));

		if (heap == NULL)
			Die("out of memory");
		srv->heap = heap;
		srv->heap_cap = cap;
	}
	HeapSet(srv, srv->heap_len++, c);
	HeapUp(srv, srv->heap_len - 1);
}

/* HeapRemove unschedules c if it is scheduled. */
static void
HeapRemove(Server *srv, Conn *c)
{
	int			i = c->heap_idx;
	Conn	   *last;

	if (i < 0)
		return;
	c->heap_idx = -1;
	last = srv->heap[--srv->heap_len];
	if (last == c)
		return;
	HeapSet(srv, i, last);
	HeapDown(srv, i);
	HeapUp(srv, last->heap_idx);
}


/* ------------------------------------------------------------------ log */

/* LogFlush writes the buffered log lines. */
static void
LogFlush(Server *srv)
{
	size_t		off = 0;

	while (off < srv->log.len)
	{
		ssize_t		w = write(srv->log_fd, srv->log.data + off, srv->log.len - off);

		if (w < 0)
		{
			if (errno == EINTR)
				continue;
			if (!srv->log_failed)
				fprintf(stderr, "sink: writing log: %s\n", strerror(errno));
			srv->log_failed = true;
			break;
		}
		off += (size_t) w;
	}
	srv->log.len = 0;
	srv->last_flush = MonoMs();
}

/*
 * LogPrefix builds the log line of request n up to its "status" member:
 * {"n":..,"t":..,"method":..,"path":..,"idempotency_key":..,
 *  "content_type":..,"headers":{..},"body":..,
 */
static bool log_rx_valid = false;	/* "rx" of the request being logged */
static struct timespec log_rx;

static void
LogPrefix(const Request *req, uint64_t n, Buf *b)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	BufPrintf(b, "{\"n\":%llu,\"t\":%lld.%06ld,",
			  (unsigned long long) n, (long long) ts.tv_sec, ts.tv_nsec / 1000);
	if (log_rx_valid)
		BufPrintf(b, "\"rx\":%lld.%09ld,", (long long) log_rx.tv_sec, log_rx.tv_nsec);
	log_rx_valid = false;
	BufPuts(b, "\"method\":");
	BufJsonStringOrNull(b, req->method, req->method_len);
	BufPuts(b, ",\"path\":");
	BufJsonStringOrNull(b, req->target, req->target_len);
	BufPuts(b, ",\"idempotency_key\":");
	BufJsonStringOrNull(b, req->key, req->key_len);
	BufPuts(b, ",\"content_type\":");
	BufJsonStringOrNull(b, req->ctype, req->ctype_len);
	BufPuts(b, ",\"headers\":{");
	for (int i = 0; i < req->nxhdr; i++)
	{
		if (i > 0)
			BufAppend(b, ",", 1);
		BufJsonString(b, req->xhdr[i].name, req->xhdr[i].name_len);
		BufAppend(b, ":", 1);
		BufJsonString(b, req->xhdr[i].value, req->xhdr[i].value_len);
	}
	BufPuts(b, "},\"body\":");
	BufJsonBody(b, req->body, req->body_len);
	BufAppend(b, ",", 1);
}

/*
 * LogFinish completes and queues one log line (prefix from LogPrefix) and
 * counts the request as handled; reaching --max-requests starts draining.
 * fault names how a request without a complete response ended (status 0),
 * NULL when the response was complete.
 */
static void
LogFinish(Server *srv, const Buf *prefix, int status, const char *fault)
{
	if (srv->log_fd >= 0)
	{
		BufAppend(&srv->log, prefix->data, prefix->len);
		if (fault != NULL)
			BufPrintf(&srv->log, "\"fault\":\"%s\",", fault);
		BufPrintf(&srv->log, "\"status\":%d}\n", status);
		if (srv->log.len >= LOG_FLUSH_BYTES)
			LogFlush(srv);
	}
	if (status >= 0 && status < 600)
		srv->by_status[status]++;
	srv->handled++;
	if (srv->max_requests > 0 && srv->handled >= srv->max_requests &&
		!srv->draining)
	{
		srv->draining = true;
		srv->drain_deadline = MonoMs() + DRAIN_MS;
		if (srv->stop_reason == NULL)
			srv->stop_reason = "max-requests reached";
	}
}


/* --------------------------------------------------------------- parsing */

/* IsTchar reports whether ch may appear in a token (RFC 9110). */
static bool
IsTchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		(ch >= '0' && ch <= '9') || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch));
}

/* HasToken reports whether a comma-separated header value lists token. */
static bool
HasToken(const char *v, size_t n, const char *token)
{
	size_t		i = 0;

	while (i < n)
	{
		size_t		start,
					end;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < n && v[i] != ',')
			i++;
		end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (MemCaseEq(v + start, end - start, token))
			return true;
	}
	return false;
}

/* FindCrlf returns the first "\r\n" in [p, limit), or NULL. */
static const char *
FindCrlf(const char *p, const char *limit)
{
	while (p < limit)
	{
		const char *cr = memchr(p, '\r', (size_t) (limit - p));

		if (cr == NULL || cr + 1 >= limit)
			return NULL;
		if (cr[1] == '\n')
			return cr;
		p = cr + 1;
	}
	return NULL;
}

/*
 * ParseChunked decodes a chunked body at p[0..n) into out. Returns 1 when
 * complete (*consumed = encoded length), 0 when more input is needed, -1
 * when malformed, -2 when the decoded body exceeds MAX_BODY_BYTES.
 */
static int
ParseChunked(const char *p, size_t n, Buf *out, size_t *consumed)
{
	size_t		i = 0;

	out->len = 0;
	for (;;)
	{
		const char *eol = FindCrlf(p + i, p + n);
		size_t		size = 0;
		size_t		j = i;

		if (eol == NULL)
			return n - i > 1024 ? -1 : 0;
		for (; p + j < eol; j++)
		{
			int			d;

			if (p[j] >= '0' && p[j] <= '9')
				d = p[j] - '0';
			else if (p[j] >= 'a' && p[j] <= 'f')
				d = p[j] - 'a' + 10;
			else if (p[j] >= 'A' && p[j] <= 'F')
				d = p[j] - 'A' + 10;
			else
				break;
			if (size > MAX_BODY_BYTES)
				return -2;
			size = size * 16 + (size_t) d;
		}
		if (j == i || (p + j < eol && p[j] != ';' && p[j] != ' ' && p[j] != '\t'))
			return -1;
		i = (size_t) (eol - p) + 2;
		if (size == 0)
		{
			/* trailer section, ended by an empty line */
			for (;;)
			{
				eol = FindCrlf(p + i, p + n);
				if (eol == NULL)
					return n - i > MAX_HEADER_BYTES ? -1 : 0;
				if (eol == p + i)
				{
					*consumed = i + 2;
					return 1;
				}
				i = (size_t) (eol - p) + 2;
			}
		}
		if (out->len + size > MAX_BODY_BYTES)
			return -2;
		if (n - i < size + 2)
			return 0;
		if (p[i + size] != '\r' || p[i + size + 1] != '\n')
			return -1;
		BufAppend(out, p + i, size);
		i += size + 2;
	}
}

/* ParseRequestLine parses "METHOD SP target SP HTTP/1.x" in [p, eol). */
static bool
ParseRequestLine(const char *p, const char *eol, Request *req)
{
	const char *s = p;
	const char *t;

	while (s < eol && IsTchar((unsigned char) *s))
		s++;
	if (s == p || s >= eol || *s != ' ')
		return false;
	t = ++s;
	while (s < eol && (unsigned char) *s > 0x20 && *s != 0x7f)
		s++;
	if (s == t || s >= eol || *s != ' ')
		return false;
	s++;
	if (eol - s != 8 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1'))
		return false;

	req->method = p;
	req->method_len = (size_t) (t - 1 - p);
	req->target = t;
	req->target_len = (size_t) (s - 1 - t);
	req->minor = s[7] - '0';

	/* Routing path: drop an absolute-form prefix and the query. */
	req->path = req->target;
	req->path_len = req->target_len;
	if (HasPrefix(req->path, req->path_len, "http://") ||
		HasPrefix(req->path, req->path_len, "https://"))
	{
		size_t		skip = req->path[4] == 's' ? 8 : 7;
		const char *slash = memchr(req->path + skip, '/', req->path_len - skip);

		if (slash == NULL)
			return false;
		req->path_len -= (size_t) (slash - req->path);
		req->path = slash;
	}
	if (req->path[0] != '/' && !MemEq(req->path, req->path_len, "*"))
		return false;
	{
		const char *q = memchr(req->path, '?', req->path_len);

		if (q != NULL)
		{
			req->query = q + 1;
			req->query_len = req->path_len - (size_t) (q + 1 - req->path);
			req->path_len = (size_t) (q - req->path);
		}
	}
	return true;
}

/* ParseHeaderLine parses "name: value" in [p, eol) and records it. */
static ParseResult
ParseHeaderLine(const char *p, const char *eol, Request *req)
{
	const char *s = p;
	const char *v;
	const char *ve;
	size_t		nlen;
	size_t		vlen;

	while (s < eol && IsTchar((unsigned char) *s))
		s++;
	if (s == p || s >= eol || *s != ':')
		return PARSE_BAD;
	nlen = (size_t) (s - p);
	v = s + 1;
	while (v < eol && (*v == ' ' || *v == '\t'))
		v++;
	ve = eol;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	for (s = v; s < ve; s++)
		if (((unsigned char) *s < 0x20 && *s != '\t') || *s == 0x7f)
			return PARSE_BAD;
	vlen = (size_t) (ve - v);

	if (MemCaseEq(p, nlen, "content-length"))
	{
		uint64_t	cl;

		if (!ParseUint(v, vlen, UINT64_MAX / 2, &cl))
			return PARSE_BAD;
		if (req->has_length && req->content_length != cl)
			return PARSE_BAD;
		req->has_length = true;
		req->content_length = (size_t) cl;
	}
	else if (MemCaseEq(p, nlen, "transfer-encoding"))
	{
		if (!MemCaseEq(v, vlen, "chunked"))
			return PARSE_TE_UNSUPPORTED;
		req->chunked = true;
	}
	else if (MemCaseEq(p, nlen, "connection"))
	{
		if (HasToken(v, vlen, "close"))
			req->keep_alive = false;
		else if (HasToken(v, vlen, "keep-alive"))
			req->keep_alive = true;
	}
	else if (MemCaseEq(p, nlen, "expect"))
		req->expect_continue = MemCaseEq(v, vlen, "100-continue");
	else if (MemCaseEq(p, nlen, "idempotency-key"))
	{
		req->key = v;
		req->key_len = vlen;
	}
	else if (MemCaseEq(p, nlen, "content-type"))
	{
		req->ctype = v;
		req->ctype_len = vlen;
	}
	else if (nlen > 2 && strncasecmp(p, "x-", 2) == 0 && req->nxhdr < MAX_X_HEADERS)
	{
		Header	   *h = &req->xhdr[req->nxhdr++];

		h->name = p;
		h->name_len = nlen;
		h->value = v;
		h->value_len = vlen;
	}
	return PARSE_OK;
}

/*
 * ParseRequest parses the request at buf[0..len). On PARSE_MORE and errors
 * the fields parsed so far stay set, for 100-continue and the log.
 */
static ParseResult
ParseRequest(Server *srv, const char *buf, size_t len, Request *req)
{
	size_t		scan = len < MAX_HEADER_BYTES ? len : MAX_HEADER_BYTES;
	const char *end;
	const char *eol;
	const char *p;
	int			lines = 0;

	memset(req, 0, offsetof(Request, xhdr));

	end = memmem(buf, scan, "\r\n\r\n", 4);
	if (end == NULL)
		return len >= MAX_HEADER_BYTES ? PARSE_HEAD_TOO_LARGE : PARSE_MORE;
	req->head_len = (size_t) (end - buf) + 4;

	eol = FindCrlf(buf, end + 2);
	if (!ParseRequestLine(buf, eol, req))
	{
		req->method = NULL;
		req->target = req->path = req->query = NULL;
		return PARSE_BAD;
	}
	req->keep_alive = req->minor == 1;

	for (p = eol + 2; p < end + 2; p = eol + 2)
	{
		ParseResult rc;

		eol = FindCrlf(p, end + 2);
		if (++lines > MAX_HEADER_LINES)
			return PARSE_HEAD_TOO_LARGE;
		if ((rc = ParseHeaderLine(p, eol, req)) != PARSE_OK)
			return rc;
	}

	if (req->chunked)
	{
		size_t		consumed = 0;
		int			rc = ParseChunked(buf + req->head_len, len - req->head_len,
									  &srv->chunked, &consumed);

		if (rc == 0)
			return PARSE_MORE;
		if (rc == -1)
			return PARSE_BAD;
		if (rc == -2)
			return PARSE_BODY_TOO_LARGE;
		req->body = srv->chunked.data;
		req->body_len = srv->chunked.len;
		req->total_len = req->head_len + consumed;
		return PARSE_OK;
	}
	if (req->content_length > MAX_BODY_BYTES)
		return PARSE_BODY_TOO_LARGE;
	if (len - req->head_len < req->content_length)
		return PARSE_MORE;
	req->body = buf + req->head_len;
	req->body_len = req->content_length;
	req->total_len = req->head_len + req->content_length;
	return PARSE_OK;
}

/* PercentDecode decodes s[0..n) into dst (NUL-terminated); false if too long. */
static bool
PercentDecode(const char *s, size_t n, char *dst, size_t cap)
{
	size_t		o = 0;

	for (size_t i = 0; i < n; i++)
	{
		char		ch = s[i];

		if (ch == '%' && i + 2 < n && isxdigit((unsigned char) s[i + 1]) &&
			isxdigit((unsigned char) s[i + 2]))
		{
			char		hex[3] = {s[i + 1], s[i + 2], '\0'};

			ch = (char) strtol(hex, NULL, 16);
			i += 2;
		}
		if (o + 1 >= cap)
			return false;
		dst[o++] = ch;
	}
	dst[o] = '\0';
	return true;
}

/* SafeHeaderValue reports whether s may be sent as a header value. */
static bool
SafeHeaderValue(const char *s)
{
	for (; *s; s++)
		if (((unsigned char) *s < 0x20 && *s != '\t') || *s == 0x7f)
			return false;
	return true;
}

/* ParseOptions reads the query-string options; false when one is invalid. */
static bool
ParseOptions(const Request *req, Options *opt)
{
	const char *q = req->query;
	const char *qend = q ? q + req->query_len : NULL;

	strcpy(opt->field, "id");
	opt->noid = false;
	opt->has_retry_after = false;
	opt->has_retry_after_date = false;
	opt->has_location = false;
	opt->error_body[0] = '\0';
	opt->error_repeat = 1;

	while (q != NULL && q < qend)
	{
		const char *amp = memchr(q, '&', (size_t) (qend - q));
		const char *pend = amp ? amp : qend;
		const char *eq = memchr(q, '=', (size_t) (pend - q));
		const char *k = q;
		size_t		klen = (size_t) ((eq ? eq : pend) - q);
		const char *v = eq ? eq + 1 : pend;
		size_t		vlen = (size_t) (pend - v);

		q = pend + 1;
		if (MemEq(k, klen, "field"))
		{
			if (vlen == 0 || !PercentDecode(v, vlen, opt->field, sizeof(opt->field)))
				return false;
		}
		else if (MemEq(k, klen, "noid"))
			opt->noid = !(MemEq(v, vlen, "0") || MemEq(v, vlen, "false"));
		else if (MemEq(k, klen, "retry_after"))
		{
			if (!PercentDecode(v, vlen, opt->retry_after, sizeof(opt->retry_after)) ||
				!SafeHeaderValue(opt->retry_after))
				return false;
			opt->has_retry_after = true;
		}
		else if (MemEq(k, klen, "retry_after_date"))
		{
			char		num[32];
			char	   *endp;

			if (!PercentDecode(v, vlen, num, sizeof(num)) || num[0] == '\0')
				return false;
			errno = 0;
			opt->retry_after_date = strtol(num, &endp, 10);
			if (*endp != '\0' || errno != 0 ||
				opt->retry_after_date > 100L * 365 * 86400 ||
				opt->retry_after_date < -100L * 365 * 86400)
				return false;
			opt->has_retry_after_date = true;
		}
		else if (MemEq(k, klen, "error_body"))
		{
			if (!PercentDecode(v, vlen, opt->error_body, sizeof(opt->error_body)))
				return false;
		}
		else if (MemEq(k, klen, "error_repeat"))
		{
			char		num[32];
			char	   *endp;

			if (!PercentDecode(v, vlen, num, sizeof(num)) || num[0] == '\0')
				return false;
			errno = 0;
			opt->error_repeat = strtol(num, &endp, 10);
			if (*endp != '\0' || errno != 0 || opt->error_repeat < 1 || opt->error_repeat > 4096)
				return false;
		}
		else if (MemEq(k, klen, "location"))
		{
			if (!PercentDecode(v, vlen, opt->location, sizeof(opt->location)) ||
				!SafeHeaderValue(opt->location))
				return false;
			opt->has_location = true;
		}
	}
	return true;
}


/* ------------------------------------------------------------ responses */

/* Reason returns the reason phrase for code. */
static const char *
Reason(int code)
{
	switch (code)
	{
		case 100: return "Continue";
		case 200: return "OK";
		case 201: return "Created";
		case 202: return "Accepted";
		case 204: return "No Content";
		case 301: return "Moved Permanently";
		case 302: return "Found";
		case 303: return "See Other";
		case 304: return "Not Modified";
		case 307: return "Temporary Redirect";
		case 308: return "Permanent Redirect";
		case 400: return "Bad Request";
		case 401: return "Unauthorized";
		case 403: return "Forbidden";
		case 404: return "Not Found";
		case 405: return "Method Not Allowed";
		case 408: return "Request Timeout";
		case 409: return "Conflict";
		case 410: return "Gone";
		case 411: return "Length Required";
		case 413: return "Content Too Large";
		case 415: return "Unsupported Media Type";
		case 422: return "Unprocessable Content";
		case 425: return "Too Early";
		case 429: return "Too Many Requests";
		case 431: return "Request Header Fields Too Large";
		case 500: return "Internal Server Error";
		case 501: return "Not Implemented";
		case 502: return "Bad Gateway";
		case 503: return "Service Unavailable";
		case 504: return "Gateway Timeout";
		case 505: return "HTTP Version Not Supported";
		default: return "Status";
	}
}

/* ResultBody sets srv->body to the JSON body for a response to request n. */
static void
ResultBody(Server *srv, int code, const Options *opt, uint64_t n)
{
	Buf		   *b = &srv->body;

	b->len = 0;
	if ((code < 200 || code > 299) && opt != NULL && opt->error_body[0] != '\0')
	{
		for (long i = 0; i < opt->error_repeat; i++)
			BufPuts(b, opt->error_body);
	}
	else if (code < 200 || code > 299)
		BufPuts(b, "{\"error\":\"injected\"}");
	else if (opt != NULL && opt->noid)
		BufPuts(b, "{}");
	else
	{
		BufAppend(b, "{", 1);
		BufJsonString(b, opt ? opt->field : "id", strlen(opt ? opt->field : "id"));
		BufPrintf(b, ":\"prov-%llu\",\"ok\":true}", (unsigned long long) n);
	}
}

/*
 * AppendResponse appends one complete response with body srv->body. opt
 * may be NULL. after != AFTER_NONE announces Connection: close.
 */
static void
AppendResponse(Server *srv, Buf *out, int code, const Options *opt,
			   const Request *req, After after)
{
	bool		no_body = code == 204 || code == 304;
	bool		head = req != NULL && req->method != NULL &&
		MemEq(req->method, req->method_len, "HEAD");

	BufPrintf(out, "HTTP/1.1 %d %s\r\n", code, Reason(code));
	if (!no_body)
		BufPrintf(out, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
				  srv->body.len);
	if (opt != NULL && opt->has_retry_after)
		BufPrintf(out, "Retry-After: %s\r\n", opt->retry_after);
	else if (opt != NULL && opt->has_retry_after_date)
	{
		time_t		when = time(NULL) + opt->retry_after_date;
		struct tm	tm;
		char		date[64];

		gmtime_r(&when, &tm);
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		BufPrintf(out, "Retry-After: %s\r\n", date);
	}
	if (opt != NULL && opt->has_location)
		BufPrintf(out, "Location: %s\r\n", opt->location);
	if (after != AFTER_NONE)
		BufPuts(out, "Connection: close\r\n");
	else if (req != NULL && req->minor == 0)
		BufPuts(out, "Connection: keep-alive\r\n");
	BufPuts(out, "\r\n");
	if (!no_body && !head)
		BufAppend(out, srv->body.data, srv->body.len);
}


/* ------------------------------------------------------------ statistics */

/* CountPath counts one request to path (without query). */
static void
CountPath(Server *srv, const char *path, size_t n)
{
	StrEntry   *e = StrMapGet(&srv->paths, path, n, false);

	if (e == NULL)
	{
		if (srv->paths.len >= MAX_PATHS_TRACKED)
		{
			path = "(other)";
			n = strlen(path);
		}
		e = StrMapGet(&srv->paths, path, n, true);
	}
	e->count++;
}

/* CountOk records a 2xx response sent for an Idempotency-Key. */
static void
CountOk(Server *srv, const char *key, size_t n)
{
	StrEntry   *e = StrMapGet(&srv->keys, key, n, true);

	e->ok++;
}

/* BuildStats writes the /__stats JSON document into srv->body. */
static void
BuildStats(Server *srv)
{
	Buf		   *b = &srv->body;
	uint64_t	more = 0;
	uint64_t	ok_more = 0;
	bool		first = true;

	for (size_t i = 0; i < srv->keys.cap; i++)
	{
		StrEntry   *e = &srv->keys.slots[i];

		if (e->key == NULL)
			continue;
		more += e->count > 1;
		ok_more += e->ok > 1;
	}
	b->len = 0;
	BufPrintf(b, "{\"requests\":%llu,\"by_path\":{", (unsigned long long) srv->requests);
	for (size_t i = 0; i < srv->paths.cap; i++)
	{
		StrEntry   *e = &srv->paths.slots[i];

		if (e->key == NULL)
			continue;
		if (!first)
			BufAppend(b, ",", 1);
		first = false;
		BufJsonString(b, e->key, e->key_len);
		BufPrintf(b, ":%llu", (unsigned long long) e->count);
	}
	BufPuts(b, "},\"by_status\":{");
	first = true;
	for (int code = 0; code < 600; code++)
	{
		if (srv->by_status[code] == 0)
			continue;
		BufPrintf(b, "%s\"%d\":%llu", first ? "" : ",", code,
				  (unsigned long long) srv->by_status[code]);
		first = false;
	}
	BufPrintf(b, "},\"distinct_keys\":%zu,\"keys_seen_more_than_once\":%llu,"
			  "\"keys_2xx_more_than_once\":%llu,\"connections\":%d,"
			  "\"delayed\":%d,\"uptime_s\":%.3f}",
			  srv->keys.len, (unsigned long long) more,
			  (unsigned long long) ok_more, srv->nconns, srv->heap_len,
			  (double) (MonoMs() - srv->start_ms) / 1000.0);
}

/* ResetStats clears the counters and per-key state (not the sequence). */
static void
ResetStats(Server *srv)
{
	srv->requests = 0;
	srv->seq_nokey = 0;
	memset(srv->by_status, 0, sizeof(srv->by_status));
	StrMapClear(&srv->paths);
	StrMapClear(&srv->keys);
}


/* ---------------------------------------------------------- request flow */

/* ParseCode parses a status code 200..599 from s[0..n). */
static int
ParseCode(const char *s, size_t n)
{
	uint64_t	v;

	if (n != 3 || !ParseUint(s, n, 599, &v) || v < 200)
		return -1;
	return (int) v;
}

/*
 * SeqAction picks step k (1-based; the last step repeats) of a /seq list
 * such as "503,429,delay3000,drop,partial,200". Any invalid step makes it
 * a 400.
 */
static Action
SeqAction(const char *list, size_t n, uint64_t k)
{
	Action		bad = {ACT_RESPOND, 400, 0};
	Action		pick = bad;
	uint64_t	idx = 0;
	size_t		i = 0;

	while (i <= n)
	{
		const char *t = list + i;
		const char *comma = memchr(t, ',', n - i);
		size_t		tlen = (size_t) ((comma ? comma : list + n) - t);
		Action		act;
		uint64_t	ms;
		int			code;

		if (tlen == 0)
			return bad;
		if (MemEq(t, tlen, "drop"))
			act = (Action) {ACT_DROP, 0, 0};
		else if (MemEq(t, tlen, "reset"))
			act = (Action) {ACT_RESET, 0, 0};
		else if (MemEq(t, tlen, "partial"))
			act = (Action) {ACT_PARTIAL, 0, 0};
		else if (HasPrefix(t, tlen, "delay") &&
				 ParseUint(t + 5, tlen - 5, MAX_DELAY_MS, &ms))
			act = (Action) {ACT_DELAY, 200, (int) ms};
		else if ((code = ParseCode(t, tlen)) > 0)
			act = (Action) {ACT_RESPOND, code, 0};
		else
			return bad;
		if (++idx <= k)
			pick = act;
		i += tlen + 1;
	}
	return pick;
}

/* NextRandom returns the next xorshift64 number of the /mix generator. */
static uint64_t
NextRandom(Server *srv)
{
	uint64_t	x = srv->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	srv->rng = x;
	return x;
}

/*
 * MixAction picks one step of a /mix list such as "200:80,503:10,delay3000:5,
 * drop" at random, each step with its weight (after ':'; 1 when absent).
 * Steps are those of /seq. Any invalid step or weight makes it a 400.
 */
static Action
MixAction(Server *srv, const char *list, size_t n)
{
	Action		bad = {ACT_RESPOND, 400, 0};
	uint64_t	total = 0;
	uint64_t	pick = 0;

	/* Two passes: sum the weights, then walk to the drawn one. */
	for (int pass = 0; pass < 2; pass++)
	{
		size_t		i = 0;
		uint64_t	acc = 0;

		if (pass == 1)
		{
			if (total == 0)
				return bad;
			pick = NextRandom(srv) % total;
		}
		while (i <= n)
		{
			const char *t = list + i;
			const char *comma = memchr(t, ',', n - i);
			size_t		tlen = (size_t) ((comma ? comma : list + n) - t);
			const char *colon = memchr(t, ':', tlen);
			size_t		slen = colon ? (size_t) (colon - t) : tlen;
			uint64_t	w = 1;

			if (slen == 0 ||
				(colon && !ParseUint(colon + 1, tlen - slen - 1, 1000000, &w)))
				return bad;
			if (pass == 0)
			{
				Action		act = SeqAction(t, slen, 1);

				if (act.kind == ACT_RESPOND && act.code == 400 && !MemEq(t, slen, "400"))
					return bad;
				total += w;
			}
			else if (pick < (acc += w))
				return SeqAction(t, slen, 1);
			i += tlen + 1;
		}
	}
	return bad;
}

/* Route decides what to do with a request; key is its entry or NULL. */
static Action
Route(Server *srv, const Request *req, StrEntry *key)
{
	const char *p = req->path;
	size_t		n = req->path_len;
	Action		act = {ACT_RESPOND, 200, 0};
	uint64_t	ms;

	if (HasPrefix(p, n, "/status/"))
	{
		act.code = ParseCode(p + 8, n - 8);
		if (act.code < 0)
			act.code = 400;
	}
	else if (HasPrefix(p, n, "/delay/"))
	{
		if (ParseUint(p + 7, n - 7, MAX_DELAY_MS, &ms))
			act = (Action) {ACT_DELAY, 200, (int) ms};
		else
			act.code = 400;
	}
	else if (MemEq(p, n, "/drop"))
		act.kind = ACT_DROP;
	else if (MemEq(p, n, "/reset"))
		act.kind = ACT_RESET;
	else if (MemEq(p, n, "/partial"))
		act.kind = ACT_PARTIAL;
	else if (HasPrefix(p, n, "/seq/"))
	{
		uint64_t	k = key ? ++key->seq : ++srv->seq_nokey;

		act = SeqAction(p + 5, n - 5, k);
	}
	else if (HasPrefix(p, n, "/mix/"))
		act = MixAction(srv, p + 5, n - 5);
	else if (HasPrefix(p, n, "/outage/"))
	{
		/* 503 for ms after the first /outage request, then 200 like /ok. */
		if (!ParseUint(p + 8, n - 8, 86400000, &ms))
			act.code = 400;
		else
		{
			uint64_t	now = MonoMs();

			if (srv->outage_start_ms == 0)
				srv->outage_start_ms = now;
			if (now - srv->outage_start_ms < ms)
				act.code = 503;
		}
	}
	else if (HasPrefix(p, n, "/windows/"))
	{
		/*
		 * Outage windows: 503 for the first down ms of every period ms,
		 * counted from the sink's start, then 200 like /ok (the soak).
		 */
		const char *comma = memchr(p + 9, ',', n - 9);
		uint64_t	period;

		if (comma == NULL ||
			!ParseUint(p + 9, (size_t) (comma - (p + 9)), 86400000, &period) || period == 0 ||
			!ParseUint(comma + 1, (size_t) (p + n - comma - 1), 86400000, &ms) || ms > period)
			act.code = 400;
		else if ((uint64_t) (MonoMs() - srv->start_ms) % period < ms)
			act.code = 503;
	}
	return act;
}

/* SetAfter moves c to CLOSING when after asks the connection to end. */
static void
SetAfter(Conn *c, After after)
{
	if (after == AFTER_NONE)
		return;
	c->state = CS_CLOSING;
	c->after = after;
}

/* Park prepares a delayed response and schedules it in the timer heap. */
static void
Park(Server *srv, Conn *c, const Request *req, uint64_t n,
	 const Options *opt, int delay_ms, After after)
{
	c->pend_log.len = 0;
	BufAppend(&c->pend_log, srv->line.data, srv->line.len);
	c->pend_resp.len = 0;
	ResultBody(srv, 200, opt, n);
	AppendResponse(srv, &c->pend_resp, 200, opt, req, after);
	c->pend_key.len = 0;
	c->pend_has_key = req->key != NULL;
	if (req->key != NULL)
		BufAppend(&c->pend_key, req->key, req->key_len);
	c->pend_status = 200;
	c->pend_after = after;
	c->state = CS_DELAYED;
	c->deadline = MonoMs() + delay_ms;
	HeapPush(srv, c);
}

/*
 * AppendPartial appends the start of a 200 that never completes: the status
 * line, a Content-Length of PARTIAL_LENGTH (or the body's, if longer) and
 * only the first PARTIAL_SENT bytes of the /ok body; the caller then closes
 * with a FIN, so the client sees the connection end mid-body.
 */
static void
AppendPartial(Server *srv, Buf *out, const Options *opt, uint64_t n)
{
	size_t		length;

	ResultBody(srv, 200, opt, n);
	length = srv->body.len > PARTIAL_LENGTH ? srv->body.len : PARTIAL_LENGTH;
	BufPrintf(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n", length);
	BufAppend(out, srv->body.data,
			  srv->body.len < PARTIAL_SENT ? srv->body.len : PARTIAL_SENT);
}

/* FirePending sends the parked response of a DELAYED connection. */
static void
FirePending(Server *srv, Conn *c)
{
	BufAppend(&c->out, c->pend_resp.data, c->pend_resp.len);
	LogFinish(srv, &c->pend_log, c->pend_status, NULL);
	if (c->pend_has_key && c->pend_status >= 200 && c->pend_status <= 299)
		CountOk(srv, c->pend_key.data, c->pend_key.len);
	c->state = CS_READING;
	SetAfter(c, c->pend_after);
	ProcessInput(srv, c);
	if (FlushOutput(srv, c))
		UpdateInterest(srv, c);
}

/* HandleRequest answers one complete request. */
static void
HandleRequest(Server *srv, Conn *c, const Request *req)
{
	After		after = req->keep_alive ? AFTER_NONE : AFTER_LINGER;
	StrEntry   *key = NULL;
	Options		opt;
	Action		act;
	uint64_t	n;

	if (MemEq(req->path, req->path_len, "/__stats"))
	{
		BuildStats(srv);
		AppendResponse(srv, &c->out, 200, NULL, req, after);
		SetAfter(c, after);
		return;
	}
	if (MemEq(req->path, req->path_len, "/__reset_stats"))
	{
		ResetStats(srv);
		srv->body.len = 0;
		BufPuts(&srv->body, "{\"ok\":true}");
		AppendResponse(srv, &c->out, 200, NULL, req, after);
		SetAfter(c, after);
		return;
	}

	n = ++srv->seq;
	srv->requests++;
	CountPath(srv, req->path, req->path_len);
	if (req->key != NULL)
	{
		key = StrMapGet(&srv->keys, req->key, req->key_len, true);
		key->count++;
	}
	if (ParseOptions(req, &opt))
		act = Route(srv, req, key);
	else
		act = (Action) {ACT_RESPOND, 400, 0};

	srv->line.len = 0;
	log_rx_valid = c->rx_valid;
	log_rx = c->rx;
	c->rx_valid = false;		/* a pipelined next request has no stamp */
	if (srv->log_fd >= 0)
		LogPrefix(req, n, &srv->line);

	switch (act.kind)
	{
		case ACT_RESPOND:
			ResultBody(srv, act.code, &opt, n);
			AppendResponse(srv, &c->out, act.code, &opt, req, after);
			LogFinish(srv, &srv->line, act.code, NULL);
			if (req->key != NULL && act.code >= 200 && act.code <= 299)
				CountOk(srv, req->key, req->key_len);
			SetAfter(c, after);
			break;
		case ACT_DELAY:
			Park(srv, c, req, n, &opt, act.delay_ms, after);
			break;
		case ACT_DROP:
			LogFinish(srv, &srv->line, 0, "drop");
			SetAfter(c, AFTER_LINGER);
			break;
		case ACT_RESET:
			LogFinish(srv, &srv->line, 0, "reset");
			SetAfter(c, AFTER_RESET);
			break;
		case ACT_PARTIAL:
			AppendPartial(srv, &c->out, &opt, n);
			LogFinish(srv, &srv->line, 0, "partial");
			SetAfter(c, AFTER_LINGER);
			break;
	}
}

/* RejectRequest answers a malformed request with code and ends the connection. */
static void
RejectRequest(Server *srv, Conn *c, const Request *req, int code)
{
	Request		safe = *req;

	/* The body was not (fully) read; never log a partial one. */
	safe.body = NULL;
	safe.body_len = 0;
	srv->requests++;
	CountPath(srv, safe.path ? safe.path : "(malformed)",
			  safe.path ? safe.path_len : strlen("(malformed)"));
	srv->line.len = 0;
	if (srv->log_fd >= 0)
		LogPrefix(&safe, ++srv->seq, &srv->line);
	else
		++srv->seq;
	ResultBody(srv, code, NULL, 0);
	AppendResponse(srv, &c->out, code, NULL, NULL, AFTER_LINGER);
	LogFinish(srv, &srv->line, code, NULL);
	SetAfter(c, AFTER_LINGER);
}

/* ProcessInput answers every complete request buffered on a READING connection. */
static void
ProcessInput(Server *srv, Conn *c)
{
	while (c->state == CS_READING && !srv->draining &&
		   c->out.len - c->out_off <= MAX_OUTPUT_PENDING)
	{
		Request		req;
		ParseResult rc;
		size_t		avail;

		/* Tolerate empty lines between requests (RFC 9112 2.2). */
		while (c->in.len - c->in_off >= 2 && c->in.data[c->in_off] == '\r' &&
			   c->in.data[c->in_off + 1] == '\n')
			c->in_off += 2;
		avail = c->in.len - c->in_off;
		if (avail == 0)
			break;

		rc = ParseRequest(srv, c->in.data + c->in_off, avail, &req);
		if (rc == PARSE_MORE)
		{
			if (avail >= MAX_INPUT_BYTES)
				RejectRequest(srv, c, &req, 413);
			else if (req.expect_continue && !c->sent_continue)
			{
				BufPuts(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
				c->sent_continue = true;
			}
			break;
		}
		if (rc != PARSE_OK)
		{
			RejectRequest(srv, c, &req,
						  rc == PARSE_HEAD_TOO_LARGE ? 431 :
						  rc == PARSE_BODY_TOO_LARGE ? 413 :
						  rc == PARSE_TE_UNSUPPORTED ? 501 : 400);
			break;
		}
		c->in_off += req.total_len;
		c->sent_continue = false;
		HandleRequest(srv, c, &req);
	}
	if (c->in_off == c->in.len)
		c->in.len = c->in_off = 0;
}


/* ----------------------------------------------------------- connections */

/* UpdateInterest sets the epoll events c needs now. */
static void
UpdateInterest(Server *srv, Conn *c)
{
	bool		room = c->in.len - c->in_off < MAX_INPUT_BYTES;
	bool		backlog = c->out.len - c->out_off > MAX_OUTPUT_PENDING;
	uint32_t	ev = 0;
	struct epoll_event e;

	if (!c->peer_eof &&
		((c->state == CS_READING && room && !backlog) ||
		 (c->state == CS_DELAYED && room) ||
		 c->state == CS_LINGER))
		ev |= EPOLLIN;
	if (c->out_off < c->out.len)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	e.events = ev;
	e.data.ptr = &c->w;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->w.fd, &e) < 0)
		Die("epoll_ctl");
	c->events = ev;
}

/* CloseConn closes c; a parked request is logged with status 0. */
static void
CloseConn(Server *srv, Conn *c)
{
	if (c->state == CS_DELAYED)
		LogFinish(srv, &c->pend_log, 0, "abandoned");
	HeapRemove(srv, c);
	close(c->w.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	BufFree(&c->in);
	BufFree(&c->out);
	BufFree(&c->pend_log);
	BufFree(&c->pend_resp);
	BufFree(&c->pend_key);
	free(c);
}

/*
 * FlushOutput writes pending output and, once it is all written, carries
 * out a CLOSING connection's end. Returns false when c was closed.
 */
static bool
FlushOutput(Server *srv, Conn *c)
{
	while (c->out_off < c->out.len)
	{
		ssize_t		w = send(c->w.fd, c->out.data + c->out_off,
							 c->out.len - c->out_off, MSG_NOSIGNAL);

		if (w > 0)
			c->out_off += (size_t) w;
		else if (w < 0 && errno == EINTR)
			continue;
		else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		else
		{
			CloseConn(srv, c);
			return false;
		}
	}
	c->out.len = c->out_off = 0;
	if (c->state != CS_CLOSING)
		return true;
	if (c->after == AFTER_RESET)
	{
		struct linger lg = {1, 0};

		setsockopt(c->w.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		CloseConn(srv, c);
		return false;
	}
	if (c->peer_eof)
	{
		CloseConn(srv, c);
		return false;
	}
	shutdown(c->w.fd, SHUT_WR);
	c->state = CS_LINGER;
	c->in.len = c->in_off = 0;
	c->deadline = MonoMs() + LINGER_MS;
	HeapPush(srv, c);
	return true;
}

/* ReadInput reads what the peer sent; returns false when c was closed. */
static bool
ReadInput(Server *srv, Conn *c)
{
	char		discard[16384];
	ssize_t		r;

	if (c->state == CS_LINGER)
	{
		r = recv(c->w.fd, discard, sizeof(discard), 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		{
			CloseConn(srv, c);
			return false;
		}
		return true;
	}

	if (c->in_off > 0)
	{
		memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
		c->in.len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in.cap - c->in.len < 4096 && c->in.cap < MAX_INPUT_BYTES)
	{
		size_t		cap = c->in.cap < 8192 ? 8192 : c->in.cap * 2;
		char	   *data;

		if (cap > MAX_INPUT_BYTES)
			cap = MAX_INPUT_BYTES;
		data = realloc(c->in.data, cap);
		if (data == NULL)
			Die("out of memory");
		c->in.data = data;
		c->in.cap = cap;
	}
	if (c->in.len == c->in.cap)
		return true;

	/*
	 * A new request starts with an empty buffer (clients do not pipeline):
	 * read its first byte alone, so the kernel timestamp that comes with it
	 * is the arrival time of the segment holding the first byte ("rx").
	 */
	if (c->state == CS_READING && c->in.len == 0)
	{
		char		cbuf[CMSG_SPACE(sizeof(struct timespec))];
		struct iovec iov = {c->in.data, 1};
		struct msghdr mh = {0};

		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		if (recvmsg(c->w.fd, &mh, 0) == 1)
		{
			c->in.len = 1;
			c->rx_valid = false;
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
				if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS)
				{
					memcpy(&c->rx, CMSG_DATA(cm), sizeof(struct timespec));
					c->rx_valid = true;
				}
		}
	}

	r = recv(c->w.fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
	if (r > 0)
	{
		c->in.len += (size_t) r;
		if (c->state == CS_READING)
			ProcessInput(srv, c);
		return FlushOutput(srv, c);
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (r < 0 || c->state == CS_DELAYED)
	{
		CloseConn(srv, c);
		return false;
	}
	/* EOF: finish writing what we owe, then close. */
	c->peer_eof = true;
	if (c->state == CS_READING)
	{
		if (c->out_off == c->out.len)
		{
			CloseConn(srv, c);
			return false;
		}
		SetAfter(c, AFTER_LINGER);
	}
	return FlushOutput(srv, c);
}

/* OnConnEvent handles epoll events for a connection. */
static void
OnConnEvent(Server *srv, Conn *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP))
	{
		CloseConn(srv, c);
		return;
	}
	if ((events & EPOLLIN) && !ReadInput(srv, c))
		return;
	if (events & EPOLLOUT)
	{
		if (!FlushOutput(srv, c))
			return;
		/* Requests held back by an output backlog can go now. */
		if (c->state == CS_READING && c->in_off < c->in.len)
		{
			ProcessInput(srv, c);
			if (!FlushOutput(srv, c))
				return;
		}
	}
	UpdateInterest(srv, c);
}

/* AcceptAll accepts every pending connection. */
static void
AcceptAll(Server *srv)
{
	for (;;)
	{
		int			fd = accept4(srv->listener.fd, NULL, NULL,
								 SOCK_NONBLOCK | SOCK_CLOEXEC);
		int			one = 1;
		struct epoll_event e;
		Conn	   *c;

		if (fd < 0)
		{
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				errno == ENOMEM)
			{
				/* Out of descriptors: stop polling the listener briefly. */
				e.events = 0;
				e.data.ptr = &srv->listener;
				epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listener.fd, &e);
				srv->accept_resume = MonoMs() + ACCEPT_PAUSE_MS;
			}
			return;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* Kernel receive times for "rx" in the log (see ReadInput). */
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
		c = calloc(1, sizeof(Conn));
		if (c == NULL)
			Die("out of memory");
		c->w.kind = WATCH_CONN;
		c->w.fd = fd;
		c->state = CS_READING;
		c->heap_idx = -1;
		c->events = EPOLLIN;
		e.events = EPOLLIN;
		e.data.ptr = &c->w;
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &e) < 0)
			Die("epoll_ctl");
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		srv->nconns++;
	}
}


/* ----------------------------------------------------------------- main */

/* Usage prints the command line. */
static void
Usage(FILE *f)
{
	fprintf(f,
			"usage: sink [--host ADDR] [--port N] [--log FILE] [--port-file FILE]\n"
			"            [--max-seconds S] [--max-requests N] [--seed N] [--quiet]\n"
			"  --host ADDR        listen address (default 127.0.0.1; ::1 works)\n"
			"  --port N           listen port, 0 = ephemeral (default 0)\n"
			"  --log FILE         JSONL request log, truncated at start\n"
			"  --port-file FILE   write the bound port here (atomic rename)\n"
			"  --max-seconds S    exit 0 after S seconds (default 600)\n"
			"  --max-requests N   exit 0 after N logged requests\n"
			"  --seed N           seed of the /mix draws (default: time and pid)\n"
			"  --quiet            no messages on stderr except errors\n"
			"Paths: /ok /status/<code> /delay/<ms> /drop /reset /partial\n"
			"       /seq/<c1>,<c2>,... /mix/<step>:<weight>,...\n"
			"       GET /__stats, POST /__reset_stats; see test/sink/README.md\n");
}

/* ParseArgs fills the command-line fields of srv; exits on bad usage. */
static void
ParseArgs(Server *srv, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		const char *arg = argv[i];
		const char *val = NULL;
		const char *eq = strchr(arg, '=');
		char		name[64];
		char	   *end;

		if (strcmp(arg, "--quiet") == 0)
		{
			srv->quiet = true;
			continue;
		}
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		{
			Usage(stdout);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0 || (size_t) ((eq ? eq : arg + strlen(arg)) - arg) >= sizeof(name))
			goto bad;
		snprintf(name, sizeof(name), "%.*s", (int) ((eq ? eq : arg + strlen(arg)) - arg), arg);
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			goto bad;

		errno = 0;
		if (strcmp(name, "--port") == 0)
		{
			long		v = strtol(val, &end, 10);

			if (*val == '\0' || *end != '\0' || v < 0 || v > 65535)
				goto bad;
			srv->port = (int) v;
		}
		else if (strcmp(name, "--host") == 0)
			srv->host = val;
		else if (strcmp(name, "--log") == 0)
			srv->log_path = val;
		else if (strcmp(name, "--port-file") == 0)
			srv->port_file = val;
		else if (strcmp(name, "--max-seconds") == 0)
		{
			srv->max_seconds = strtod(val, &end);
			if (*val == '\0' || *end != '\0' || errno != 0 ||
				!(srv->max_seconds > 0) || srv->max_seconds > 1e7)
				goto bad;
		}
		else if (strcmp(name, "--seed") == 0)
		{
			unsigned long long v = strtoull(val, &end, 10);

			if (*val == '\0' || *val == '-' || *end != '\0' || errno != 0)
				goto bad;
			srv->rng = v;
		}
		else if (strcmp(name, "--max-requests") == 0)
		{
			unsigned long long v = strtoull(val, &end, 10);

			if (*val == '\0' || *val == '-' || *end != '\0' || errno != 0)
				goto bad;
			srv->max_requests = v;
		}
		else
			goto bad;
		continue;
bad:
		fprintf(stderr, "sink: bad argument: %s\n", arg);
		Usage(stderr);
		exit(2);
	}
}

/* OpenListener binds and listens on host:port and returns the bound port. */
static int
OpenListener(Server *srv)
{
	struct addrinfo hints;
	struct addrinfo *res;
	struct sockaddr_storage ss;
	socklen_t	sslen = sizeof(ss);
	char		port[16];
	int			one = 1;
	int			fd;
	int			rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", srv->port);
	rc = getaddrinfo(srv->host, port, &hints, &res);
	if (rc != 0)
	{
		fprintf(stderr, "sink: resolving %s: %s\n", srv->host, gai_strerror(rc));
		exit(1);
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		Die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Receive timestamps from the start (accepted sockets set it again). */
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0)
		Die("bind");
	freeaddrinfo(res);
	if (listen(fd, 4096) < 0)
		Die("listen");
	if (getsockname(fd, (struct sockaddr *) &ss, &sslen) < 0)
		Die("getsockname");
	srv->listener.kind = WATCH_LISTENER;
	srv->listener.fd = fd;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
	return ntohs(((struct sockaddr_in *) &ss)->sin_port);
}

/* WritePortFile writes port to path via a temporary file and rename(2). */
static void
WritePortFile(const char *path, int port)
{
	size_t		n = strlen(path) + 32;
	char	   *tmp = malloc(n);
	FILE	   *f;

	if (tmp == NULL)
		Die("out of memory");
	snprintf(tmp, n, "%s.tmp.%ld", path, (long) getpid());
	f = fopen(tmp, "w");
	if (f == NULL)
		Die(tmp);
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0)
		Die(tmp);
	if (rename(tmp, path) < 0)
		Die(path);
	free(tmp);
}

/* Setup opens the log, listener, signal fd and epoll set. */
static void
Setup(Server *srv)
{
	struct epoll_event e;
	struct rlimit rl;
	sigset_t	mask;
	int			port;

	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	srv->log_fd = -1;
	if (srv->log_path != NULL)
	{
		srv->log_fd = open(srv->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (srv->log_fd < 0)
			Die(srv->log_path);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		Die("sigprocmask");
	srv->sig.kind = WATCH_SIGNAL;
	srv->sig.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (srv->sig.fd < 0)
		Die("signalfd");

	port = OpenListener(srv);

	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epfd < 0)
		Die("epoll_create1");
	e.events = EPOLLIN;
	e.data.ptr = &srv->listener;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->listener.fd, &e) < 0)
		Die("epoll_ctl");
	e.data.ptr = &srv->sig;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->sig.fd, &e) < 0)
		Die("epoll_ctl");

	srv->start_ms = MonoMs();
	srv->end_ms = srv->start_ms + (int64_t) (srv->max_seconds * 1000.0);
	srv->last_flush = srv->start_ms;
	srv->port = port;
	if (srv->port_file != NULL)
		WritePortFile(srv->port_file, port);
	if (!srv->quiet)
		fprintf(stderr, "sink: listening on %s port %d (pid %ld, max %.0f s)\n",
				srv->host, port, (long) getpid(), srv->max_seconds);
}

/* NextTimeout returns the epoll_wait timeout in ms. */
static int
NextTimeout(Server *srv, int64_t now)
{
	int64_t		until = srv->end_ms;

	if (srv->heap_len > 0 && srv->heap[0]->deadline < until)
		until = srv->heap[0]->deadline;
	if (srv->log.len > 0 && srv->last_flush + LOG_FLUSH_MS < until)
		until = srv->last_flush + LOG_FLUSH_MS;
	if (srv->accept_resume && srv->accept_resume < until)
		until = srv->accept_resume;
	if (srv->draining && srv->drain_deadline < until)
		until = srv->drain_deadline;
	if (until - now > 60000)
		return 60000;
	return until > now ? (int) (until - now) : 0;
}

/* Housekeeping runs due timers and decides whether to stop. */
static void
Housekeeping(Server *srv)
{
	int64_t		now = MonoMs();

	while (srv->heap_len > 0 && srv->heap[0]->deadline <= now)
	{
		Conn	   *c = srv->heap[0];

		HeapRemove(srv, c);
		if (c->state == CS_DELAYED)
			FirePending(srv, c);
		else
			CloseConn(srv, c);
	}
	if (srv->accept_resume && now >= srv->accept_resume)
	{
		struct epoll_event e = {.events = EPOLLIN, .data.ptr = &srv->listener};

		srv->accept_resume = 0;
		if (srv->listener.fd >= 0)
			epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listener.fd, &e);
	}
	if (srv->draining)
	{
		bool		pending = false;

		if (srv->listener.fd >= 0)
		{
			close(srv->listener.fd);
			srv->listener.fd = -1;
		}
		for (Conn *c = srv->conns; c != NULL && !pending; c = c->next)
			pending = c->out_off < c->out.len;
		if (!pending || now >= srv->drain_deadline)
			srv->stop = true;
	}
	if (now >= srv->end_ms)
	{
		srv->stop = true;
		if (srv->stop_reason == NULL)
			srv->stop_reason = "max-seconds reached";
	}
	if (srv->log.len > 0 && (now - srv->last_flush >= LOG_FLUSH_MS || srv->stop))
		LogFlush(srv);
}

/* main runs the event loop until a limit or signal stops it. */
int
main(int argc, char **argv)
{
	static Server srv;
	struct epoll_event events[MAX_EVENTS];

	srv.host = "127.0.0.1";
	srv.max_seconds = 600;
	srv.rng = (uint64_t) time(NULL) * 2654435761u ^ (uint64_t) getpid();
	ParseArgs(&srv, argc, argv);
	if (srv.rng == 0)
		srv.rng = 88172645463325252ull;	/* xorshift64 needs a non-zero state */
	Setup(&srv);

	while (!srv.stop)
	{
		int			n = epoll_wait(srv.epfd, events, MAX_EVENTS,
								   NextTimeout(&srv, MonoMs()));

		if (n < 0 && errno != EINTR)
			Die("epoll_wait");
		for (int i = 0; i < n; i++)
		{
			Watch	   *w = events[i].data.ptr;

			if (w->kind == WATCH_LISTENER)
			{
				if (!srv.draining)
					AcceptAll(&srv);
			}
			else if (w->kind == WATCH_SIGNAL)
			{
				struct signalfd_siginfo si;

				while (read(srv.sig.fd, &si, sizeof(si)) == sizeof(si))
				{
					srv.stop = true;
					srv.stop_reason = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
				}
			}
			else
				OnConnEvent(&srv, (Conn *) w, events[i].events);
		}
		Housekeeping(&srv);
	}

	/* Parked requests never answered are logged with status 0. */
	while (srv.conns != NULL)
		CloseConn(&srv, srv.conns);
	if (srv.log.len > 0)
		LogFlush(&srv);
	if (srv.log_fd >= 0)
		close(srv.log_fd);
	if (!srv.quiet)
		fprintf(stderr, "sink: exiting (%s) after %llu requests\n",
				srv.stop_reason ? srv.stop_reason : "stopped",
				(unsigned long long) srv.handled);
	return 0;
}
