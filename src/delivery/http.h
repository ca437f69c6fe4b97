/*-------------------------------------------------------------------------
 *
 * src/delivery/http.h
 *	  Concurrent HTTP POSTs for the dispatcher (libcurl multi interface).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_HTTP_H
#define IDEMGATE_HTTP_H

#include "postgres.h"

/* Longest response body kept (for the provider id); the rest is discarded. */
#define HTTP_MAX_BODY_KEPT (256 * 1024)

/*
 * One POST. The caller fills the request part, HttpStart sends it, and
 * HttpPoll hands it back with the response part filled in. Strings are
 * owned by the caller and must live until the request comes back.
 */
typedef struct HttpRequest
{
	/* request */
	const char *url;
	const char *body;			/* NULL: a GET (a status look-up) */
	size_t		body_len;
	const char *const *headers;	/* "Name: value" lines */
	int			nheaders;
	long		timeout_ms;
	const char *effect_type;	/* for the send barrier (src/delivery/send_barrier.c) */
	bool		host_listed;	/* set by HttpStart: may connect to non-public addresses */

	/* response */
	bool		finished;
	int			curl_code;		/* CURLcode; 0 = a complete HTTP response */
	long		status;			/* HTTP status, 0 when none was received */
	bool		request_sent;	/* see HttpRequestWasSent */
	bool		held;			/* not sent: the send barrier refused it */
	int64		retry_after_usecs;	/* from Retry-After; -1 when none */
	char	   *resp_body;		/* malloc'd, NUL-terminated, may be NULL */
	size_t		resp_len;
	char		error[256];		/* human-readable transport error */
	int			os_errno;		/* errno of the last socket failure, 0 if none */
	bool		destination_refused;	/* connect refused: non-public address (error says which) */

	/* private */
	void	   *easy;
	void	   *header_list;
	char	   *retry_after_raw;
	bool		response_started;
	char		refused_why[160];
	bool		in_multi;
	size_t		body_sent;
	struct HttpRequest *flight_prev;
	struct HttpRequest *flight_next;
} HttpRequest;

extern void HttpInit(void);
extern void HttpShutdown(void);
extern bool HttpStart(HttpRequest *req);
extern void HttpKick(void);
extern int	HttpInFlight(void);
extern int	HttpPoll(long timeout_ms, int wake_fd, HttpRequest **done, int max_done);
extern int	HttpAbortAll(HttpRequest **aborted, int max_aborted);
extern void HttpRequestFree(HttpRequest *req);
extern bool HttpHeaderLineSafe(const char *line);

#endif
