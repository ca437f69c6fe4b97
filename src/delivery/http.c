/*-------------------------------------------------------------------------
 *
 * src/delivery/http.c
 *	  Concurrent HTTP POSTs (and status look-ups, GET: body NULL) for the
 *	  dispatcher, on libcurl's multi interface.
 *
 * Design note. One multi handle per dispatcher process lives for the life
 * of the process, so its connection cache keeps keep-alive connections to
 * the endpoints open across rounds; finished easy handles go back to a small
 * pool and are reset before reuse. Nothing here touches the database or
 * allocates with palloc inside a libcurl callback (an ERROR must never
 * longjmp through libcurl): callbacks only malloc into the request.
 *
 * Safety settings on every request: only http and https
 * (CURLOPT_PROTOCOLS_STR), redirects never followed
 * (CURLOPT_FOLLOWLOCATION 0: a 3xx comes back as a 3xx), no signals
 * (CURLOPT_NOSIGNAL, required in a multi-process server), a total timeout
 * (CURLOPT_TIMEOUT_MS) and no "Expect: 100-continue" round trip.
 *
 * Destinations (README.md, "Where effects may be sent"). Every connection goes
 * through OpenSocket, which sees the address libcurl resolved and is about to
 * connect to, for every scheme: a non-public address
 * (src/policy/destinations.c) is refused before any packet is sent, unless the
 * URL's host is listed in idemgate.allowed_http_hosts. libcurl then tries the
 * name's other addresses; when none is allowed the request fails with
 * destination_refused set and the address in error, and the dispatcher records
 * a rejected failure. Proxies are disabled (CURLOPT_PROXY ""), so the address
 * checked is the provider's, not a proxy's from the environment. A kept-alive
 * connection is reused without a new check, so when
 * idemgate.allowed_http_hosts changes the connection cache is emptied
 * (ForgetConnections, as soon as nothing is in flight; until then requests to
 * hosts not listed open fresh connections): a connection a host opened to a
 * private address while it was listed is never reused after it was taken off
 * the list.
 *
 * The send barrier (src/delivery/send_barrier.c) has the last word on every
 * request: libcurl's pre-request callback (PreRequest), called once the
 * connection is up and right before the request is written, asks it, and
 * a refused request is aborted unsent (held). curl_multi_perform, the
 * only call that writes requests, is bracketed for it (Perform).
 *
 * "Was the request sent?" (HttpRequestWasSent). A request counts as sent as
 * soon as any byte of a response arrived, or when libcurl reports that it
 * wrote the request headers (CURLINFO_REQUEST_SIZE > 0) and the whole body
 * (CURLINFO_SIZE_UPLOAD_T equals the body length) to the socket. Until
 * then the provider cannot have acted on it, so a timeout, refusal or reset
 * is a transport failure, safe to retry; after that a timeout means the
 * effect may have happened.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <time.h>

#include "datatype/timestamp.h"

#include "policy/destinations.h"
#include "policy/endpoints.h"
#include "core/guc.h"
#include "delivery/http.h"
#include "core/idemgate_limits.h"
#include "delivery/send_barrier.h"

/* Idle handles kept: one per request slot. */
#define HTTP_POOL_MAX IDEMGATE_MAX_IN_FLIGHT
/* Connections kept alive between rounds, at least. */
#define MIN_KEPT_CONNECTIONS 8

static CURLM *multi = NULL;
static CURL *idle_pool[HTTP_POOL_MAX];
static int	idle_count = 0;
static int	in_flight = 0;
static HttpRequest *flight_head = NULL;	/* every request in flight */
/* allowed_http_hosts the cached connections were opened under */
static char *hosts_of_cache = NULL;

/* HttpInit sets up libcurl and the multi handle once per process. */
void
HttpInit(void)
{
	if (multi != NULL)
		return;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		elog(ERROR, "curl_global_init failed");
	multi = curl_multi_init();
	if (multi == NULL)
		elog(ERROR, "curl_multi_init failed");
	/* Keep at least one connection per request slot alive between rounds. */
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long) Max(IdemgateMaxInFlight,
															  MIN_KEPT_CONNECTIONS));
}

/* HttpShutdown closes every connection and handle. */
void
HttpShutdown(void)
{
	while (idle_count > 0)
		curl_easy_cleanup(idle_pool[--idle_count]);
	if (multi != NULL)
		curl_multi_cleanup(multi);
	multi = NULL;
}

/* ForgetConnections closes every cached connection (nothing may be in flight). */
static void
ForgetConnections(void)
{
	Assert(in_flight == 0);
	curl_multi_cleanup(multi);
	multi = NULL;
	HttpInit();
}

/*
 * HostsChanged tells whether idemgate.allowed_http_hosts differs from the
 * list the cached connections were opened under; empties the cache (and
 * returns false) when it can.
 */
static bool
HostsChanged(void)
{
	const char *hosts = IdemgateAllowedHttpHosts ? IdemgateAllowedHttpHosts : "";
	char	   *copy;

	if (hosts_of_cache != NULL && strcmp(hosts_of_cache, hosts) == 0)
		return false;
	if (in_flight > 0)
		return true;
	copy = strdup(hosts);
	if (copy == NULL)
		return true;
	if (hosts_of_cache != NULL)
		ForgetConnections();
	free(hosts_of_cache);
	hosts_of_cache = copy;
	return false;
}

/* WriteBody keeps the first HTTP_MAX_BODY_KEPT bytes of the response body. */
static size_t
WriteBody(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	HttpRequest *req = (HttpRequest *) userdata;
	size_t		n = size * nmemb;
	size_t		keep;
	char	   *grown;

	req->response_started = true;
	if (req->resp_len >= HTTP_MAX_BODY_KEPT)
		return n;
	keep = Min(n, HTTP_MAX_BODY_KEPT - req->resp_len);
	grown = realloc(req->resp_body, req->resp_len + keep + 1);
	if (grown == NULL)
		return n;				/* keep what we have; the body is advisory */
	req->resp_body = grown;
	memcpy(req->resp_body + req->resp_len, ptr, keep);
	req->resp_len += keep;
	req->resp_body[req->resp_len] = '\0';
	return n;
}

/*
 * ReadBody supplies the request body. We stream it through a read callback
 * (rather than CURLOPT_POSTFIELDS) only so that RefuseRewind below can stop
 * libcurl from re-sending it.
 */
static size_t
ReadBody(char *buffer, size_t size, size_t nitems, void *userdata)
{
	HttpRequest *req = (HttpRequest *) userdata;
	size_t		room = size * nitems;
	size_t		left = req->body_len - req->body_sent;
	size_t		n = Min(room, left);

	memcpy(buffer, req->body + req->body_sent, n);
	req->body_sent += n;
	return n;
}

/*
 * RefuseRewind makes a silent re-send impossible. When a reused keep-alive
 * connection dies without a response, libcurl retries the request on
 * another connection (up to five times) — for a POST that the provider may
 * already have acted on, that is a duplicate effect. A retry must rewind
 * the body; refusing turns it into CURLE_SEND_FAIL_REWIND, which we
 * classify like any other "no response after the request was sent".
 */
static int
RefuseRewind(void *userdata, curl_off_t offset, int origin)
{
	HttpRequest *req = (HttpRequest *) userdata;

	if (offset == 0 && origin == SEEK_SET && req->body_sent == 0)
		return CURL_SEEKFUNC_OK;	/* nothing was sent yet: harmless */
	return CURL_SEEKFUNC_CANTSEEK;
}

/* WriteHeader notes that a response began and keeps its Retry-After. */
static size_t
WriteHeader(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	HttpRequest *req = (HttpRequest *) userdata;
	size_t		n = size * nmemb;
	static const char name[] = "retry-after:";

	req->response_started = true;
	if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0)
	{
		/* A new status line (e.g. after a 1xx): forget earlier headers. */
		free(req->retry_after_raw);
		req->retry_after_raw = NULL;
	}
	else if (n > sizeof(name) - 1 && pg_strncasecmp(ptr, name, sizeof(name) - 1) == 0)
	{
		const char *v = ptr + sizeof(name) - 1;
		size_t		len = n - (sizeof(name) - 1);
		char	   *copy;

		while (len > 0 && (*v == ' ' || *v == '\t'))
			v++, len--;
		while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' ||
						   v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
		copy = malloc(len + 1);
		if (copy != NULL)
		{
			memcpy(copy, v, len);
			copy[len] = '\0';
			free(req->retry_after_raw);
			req->retry_after_raw = copy;
		}
	}
	return n;
}

/*
 * ParseRetryAfter turns a Retry-After value (delta-seconds or an HTTP-date)
 * into microseconds from now; -1 when absent or unparseable.
 */
static int64
ParseRetryAfter(const char *v)
{
	const char *p;
	int64		secs = 0;

	if (v == NULL || *v == '\0')
		return -1;
	for (p = v; *p >= '0' && *p <= '9'; p++)
	{
		secs = secs * 10 + (*p - '0');
		if (secs > IDEMGATE_MAX_RETRY_AFTER_SECS)
			secs = IDEMGATE_MAX_RETRY_AFTER_SECS;
	}
	if (p != v && *p == '\0')
		return secs * USECS_PER_SEC;
	{
		time_t		when = curl_getdate(v, NULL);
		time_t		now = time(NULL);

		if (when == (time_t) -1)
			return -1;
		return when > now ? (int64) (when - now) * USECS_PER_SEC : 0;
	}
}

/*
 * OpenSocket opens the socket for a connection unless its address is
 * non-public and the host is not listed (see the header comment).
 */
static curl_socket_t
OpenSocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address)
{
	HttpRequest *req = (HttpRequest *) clientp;

	if (!req->host_listed &&
		DestinationRefused(&address->addr, req->refused_why, sizeof(req->refused_why)))
	{
		req->destination_refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(address->family, address->socktype, address->protocol);
}

/* HttpRequestWasSent applies the rule in the header comment. */
static bool
HttpRequestWasSent(HttpRequest *req, CURL *easy)
{
	long		request_size = 0;
	curl_off_t	uploaded = 0;

	if (req->response_started)
		return true;
	if (curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size) != CURLE_OK)
		return false;
	if (curl_easy_getinfo(easy, CURLINFO_SIZE_UPLOAD_T, &uploaded) != CURLE_OK)
		return false;
	return request_size > 0 && (size_t) uploaded >= req->body_len;
}

/* FinishRequest fills the response part of req from its easy handle. */
static void
FinishRequest(HttpRequest *req, CURLcode code)
{
	CURL	   *easy = (CURL *) req->easy;
	long		status = 0;

	req->finished = true;
	req->curl_code = (int) code;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	req->status = (code == CURLE_OK) ? status : 0;
	req->request_sent = HttpRequestWasSent(req, easy);
	{
		long		os_errno = 0;

		curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &os_errno);
		req->os_errno = (int) os_errno;
	}
	req->retry_after_usecs = ParseRetryAfter(req->retry_after_raw);
	if (code != CURLE_OK && req->destination_refused)
		snprintf(req->error, sizeof(req->error), "%s; not listed in idemgate.allowed_http_hosts",
				 req->refused_why);
	else if (code != CURLE_OK && req->error[0] == '\0')
		strlcpy(req->error, curl_easy_strerror(code), sizeof(req->error));

	if (req->in_multi)
		curl_multi_remove_handle(multi, easy);
	req->in_multi = false;
	in_flight--;
	if (req->flight_prev)
		req->flight_prev->flight_next = req->flight_next;
	else
		flight_head = req->flight_next;
	if (req->flight_next)
		req->flight_next->flight_prev = req->flight_prev;
	req->flight_prev = req->flight_next = NULL;
	if (idle_count < HTTP_POOL_MAX)
		idle_pool[idle_count++] = easy;
	else
		curl_easy_cleanup(easy);
	req->easy = NULL;
	curl_slist_free_all((struct curl_slist *) req->header_list);
	req->header_list = NULL;
}

/*
 * Perform runs curl_multi_perform, the only call in which libcurl writes
 * requests, marked for the send barrier (src/delivery/send_barrier.c).
 */
static void
Perform(int *running)
{
	SendBarrierPerformBegin();
	curl_multi_perform(multi, running);
	SendBarrierPerformEnd();
}

/*
 * PreRequest is libcurl's pre-request callback: the connection is up and
 * the request is about to be written. The send barrier has the last word
 * (kill switch, type pause); a refused request is aborted unsent.
 */
static int
PreRequest(void *clientp, char *conn_primary_ip, char *conn_local_ip,
		   int conn_primary_port, int conn_local_port)
{
	HttpRequest *req = (HttpRequest *) clientp;

	if (SendBarrierAllows(req->effect_type))
		return CURL_PREREQFUNC_OK;
	req->held = true;
	return CURL_PREREQFUNC_ABORT;
}

/*
 * HttpStart adds req to the set of transfers in flight. On a local failure
 * (out of memory) it returns false with req finished and an error set.
 */
bool
HttpStart(HttpRequest *req)
{
	CURL	   *easy;
	struct curl_slist *list = NULL;
	CURLMcode	mrc;
	bool		fresh;

	Assert(multi != NULL);
	req->finished = false;
	req->curl_code = 0;
	req->status = 0;
	req->request_sent = false;
	req->retry_after_usecs = -1;
	req->resp_body = NULL;
	req->resp_len = 0;
	req->error[0] = '\0';
	req->retry_after_raw = NULL;
	req->response_started = false;
	req->in_multi = false;
	req->body_sent = 0;
	req->os_errno = 0;
	req->destination_refused = false;
	req->refused_why[0] = '\0';
	req->held = false;
	req->host_listed = EndpointHostListed(req->url);
	fresh = HostsChanged() && !req->host_listed;

	if (idle_count > 0)
	{
		easy = idle_pool[--idle_count];
		curl_easy_reset(easy);
	}
	else
		easy = curl_easy_init();
	if (easy == NULL)
	{
		req->finished = true;
		req->curl_code = CURLE_OUT_OF_MEMORY;
		strlcpy(req->error, "could not create a libcurl handle", sizeof(req->error));
		return false;
	}

	for (int i = 0; i < req->nheaders; i++)
	{
		struct curl_slist *l = curl_slist_append(list, req->headers[i]);

		if (l == NULL)
			break;
		list = l;
	}
	/* No "Expect: 100-continue" wait before the body. */
	{
		struct curl_slist *l = curl_slist_append(list, "Expect:");

		if (l != NULL)
			list = l;
	}
	req->header_list = list;
	req->easy = easy;

	curl_easy_setopt(easy, CURLOPT_URL, req->url);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	if (req->body != NULL)
	{
		curl_easy_setopt(easy, CURLOPT_POST, 1L);
		curl_easy_setopt(easy, CURLOPT_READFUNCTION, ReadBody);
		curl_easy_setopt(easy, CURLOPT_READDATA, req);
		curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, RefuseRewind);
		curl_easy_setopt(easy, CURLOPT_SEEKDATA, req);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
	}
	else
		curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);	/* a status look-up: it decides nothing */
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "idemgate/" IDEMGATE_VERSION);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, WriteBody);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, req);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, WriteHeader);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, req);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, req->error);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
	curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, OpenSocket);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, req);
	curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, PreRequest);
	curl_easy_setopt(easy, CURLOPT_PREREQDATA, req);
	curl_easy_setopt(easy, CURLOPT_PROXY, "");
	if (fresh)
		curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, 1L);

	in_flight++;
	req->flight_prev = NULL;
	req->flight_next = flight_head;
	if (flight_head)
		flight_head->flight_prev = req;
	flight_head = req;
	mrc = curl_multi_add_handle(multi, easy);
	if (mrc != CURLM_OK)
	{
		FinishRequest(req, CURLE_FAILED_INIT);
		strlcpy(req->error, curl_multi_strerror(mrc), sizeof(req->error));
		return false;
	}
	req->in_multi = true;
	return true;
}

/*
 * HttpKick writes what can be written now, without waiting and without
 * collecting what finished (the next HttpPoll does): the dispatcher calls
 * it right after starting rate-limited requests, so that a request goes
 * out when its start was reserved (src/policy/rate_limit.c), not after the
 * round or housekeeping that may come before the next HttpPoll. That
 * delay, longer than the limiter's 20 ms of slack, once let the next start
 * follow too closely at the provider: 21 requests in one second at
 * rate_limit 20 (TAP 123).
 */
void
HttpKick(void)
{
	int			running = 0;

	if (in_flight > 0)
		Perform(&running);
}

/* HttpInFlight tells how many requests are in flight. */
int
HttpInFlight(void)
{
	return in_flight;
}

/*
 * HttpPoll drives the transfers, waiting up to timeout_ms for progress when
 * none has finished yet, and stores finished requests in done (which must
 * have room for every request in flight). Returns how many finished.
 *
 * wake_fd (or -1) is watched together with the transfers' sockets: the
 * wait ends as soon as it is readable, and then nothing more is performed
 * (no request is written) before the caller has looked at why. The
 * dispatcher passes the postmaster-death pipe, so a dispatcher waiting on
 * slow requests notices the postmaster's death in its wait itself, not at
 * the wait's end (docs/dispatcher.md, "Shutdown and crashes").
 */
int
HttpPoll(long timeout_ms, int wake_fd, HttpRequest **done, int max_done)
{
	int			running = 0;
	int			ndone = 0;
	int			pending;
	CURLMsg    *msg;

	if (in_flight == 0)
		return 0;
	Perform(&running);
	if (running == in_flight && timeout_ms > 0)
	{
		struct curl_waitfd wake = {0};

		wake.fd = wake_fd;
		wake.events = CURL_WAIT_POLLIN;
		curl_multi_poll(multi, wake_fd >= 0 ? &wake : NULL, wake_fd >= 0 ? 1 : 0,
						(int) timeout_ms, NULL);
		if (wake_fd >= 0 && wake.revents != 0)
			return 0;			/* the caller decides first */
		Perform(&running);
	}
	while (ndone < max_done && (msg = curl_multi_info_read(multi, &pending)) != NULL)
	{
		HttpRequest *req = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &req);
		if (req == NULL)
			continue;
		FinishRequest(req, msg->data.result);
		done[ndone++] = req;
	}
	return ndone;
}

/*
 * HttpAbortAll stops every request in flight and returns them, finished as
 * timeouts (request_sent tells whether the provider may have acted).
 */
int
HttpAbortAll(HttpRequest **aborted, int max_aborted)
{
	int			n = 0;

	while (flight_head != NULL && n < max_aborted)
	{
		HttpRequest *req = flight_head;

		strlcpy(req->error, "aborted: dispatcher shutting down", sizeof(req->error));
		FinishRequest(req, CURLE_OPERATION_TIMEDOUT);
		aborted[n++] = req;
	}
	return n;
}

/* HttpRequestFree releases what libcurl callbacks allocated. */
void
HttpRequestFree(HttpRequest *req)
{
	free(req->resp_body);
	req->resp_body = NULL;
	free(req->retry_after_raw);
	req->retry_after_raw = NULL;
}

/* HttpHeaderLineSafe rejects header lines that could inject other headers. */
bool
HttpHeaderLineSafe(const char *line)
{
	return strpbrk(line, "\r\n") == NULL && strchr(line, ':') != NULL;
}
