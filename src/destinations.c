/*-------------------------------------------------------------------------
 *
 * src/destinations.c
 *	  Which network addresses effects may be sent to (README.md, "Where effects may be sent"): an
 *	  address must be public unless its host is listed in
 *	  idemgate.allowed_http_hosts.
 *
 * Design note. The check runs twice. register_endpoint (and the dispatcher
 * before each send) refuses a URL whose host is a numeric address in a
 * refused range, and libcurl's socket-open callback (src/http.c) refuses
 * the address a request is about to connect to, after DNS: a name that
 * resolves, or later re-resolves, to a private address cannot slip
 * through, whatever the scheme. DestinationRefused is called from inside
 * libcurl, so it must not allocate with palloc nor raise.
 *
 * Refused: unspecified, loopback, private (10/8, 172.16/12, 192.168/16),
 * CGNAT (100.64/10), link-local (169.254/16, fe80::/10), multicast
 * (224/4, ff00::/8), broadcast and the rest of 240/4, "this network"
 * (0/8), unique-local (fc00::/7), and IPv6 forms that carry an IPv4
 * address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) when the IPv4 address they carry is
 * refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "destinations.h"

/* An IPv4 range: address and prefix length, host byte order. */
typedef struct V4Range
{
	uint32		net;
	int			bits;
	const char *what;
} V4Range;

static const V4Range refused_v4[] = {
	{0x00000000, 8, "this network"},
	{0x0A000000, 8, "private"},
	{0x64400000, 10, "carrier-grade NAT"},
	{0x7F000000, 8, "loopback"},
	{0xA9FE0000, 16, "link-local"},
	{0xAC100000, 12, "private"},
	{0xC0A80000, 16, "private"},
	{0xE0000000, 4, "multicast"},
	{0xF0000000, 4, "reserved or broadcast"},
};

/* V4Refused returns why the IPv4 address (host order) is refused, or NULL. */
static const char *
V4Refused(uint32 a)
{
	for (int i = 0; i < lengthof(refused_v4); i++)
	{
		uint32		mask = refused_v4[i].bits == 0 ? 0 : ~(uint32) 0 << (32 - refused_v4[i].bits);

		if ((a & mask) == refused_v4[i].net)
			return refused_v4[i].what;
	}
	return NULL;
}

/* V4At reads four bytes as an IPv4 address in host order. */
static uint32
V4At(const unsigned char *b)
{
	return ((uint32) b[0] << 24) | ((uint32) b[1] << 16) | ((uint32) b[2] << 8) | b[3];
}

/* V6Refused returns why the IPv6 address is refused, or NULL. */
static const char *
V6Refused(const unsigned char *b)
{
	static const unsigned char zeros[16] = {0};
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
	const char *why;

	if (memcmp(b, zeros, 15) == 0 && (b[15] == 0 || b[15] == 1))
		return b[15] == 0 ? "unspecified" : "loopback";
	if (b[0] == 0xff)
		return "multicast";
	if ((b[0] & 0xfe) == 0xfc)
		return "unique-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "site-local";
	if (memcmp(b, mapped, 12) == 0 || memcmp(b, zeros, 12) == 0 || memcmp(b, nat64, 12) == 0)
	{
		/* IPv4-mapped, IPv4-compatible or NAT64: judge the IPv4 inside. */
		why = V4Refused(V4At(b + 12));
		return why ? why : NULL;
	}
	if (b[0] == 0x20 && b[1] == 0x02)
		return V4Refused(V4At(b + 2));	/* 6to4 */
	return NULL;
}

/* DestinationRefused classifies a socket address; see destinations.h. */
bool
DestinationRefused(const struct sockaddr *sa, char *buf, size_t buflen)
{
	const char *why = NULL;
	char		text[INET6_ADDRSTRLEN] = "?";

	if (sa == NULL)
		why = "unknown";
	else if (sa->sa_family == AF_INET)
	{
		const struct sockaddr_in *in = (const struct sockaddr_in *) sa;

		why = V4Refused(ntohl(in->sin_addr.s_addr));
		inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
	}
	else if (sa->sa_family == AF_INET6)
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;

		why = V6Refused(in6->sin6_addr.s6_addr);
		inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
	}
	else
		why = "not an IP address";

	if (why == NULL)
		return false;
	if (buf != NULL && buflen > 0)
		snprintf(buf, buflen, "destination address %s is %s", text, why);
	return true;
}

/* NumericHostRefused checks a URL host that is a numeric address; see destinations.h. */
bool
NumericHostRefused(const char *host, char *buf, size_t buflen)
{
	struct addrinfo hints;
	struct addrinfo *res = NULL;
	char		bare[256];
	size_t		len = strlen(host);
	bool		refused = false;

	/* Strip the brackets of an IPv6 literal and any zone id. */
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']')
	{
		host++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(bare))
		return false;
	memcpy(bare, host, len);
	bare[len] = '\0';
	{
		char	   *zone = strchr(bare, '%');

		if (zone != NULL)
			*zone = '\0';
	}

	/* AI_NUMERICHOST: never a DNS query; also reads 127.1, 0x7f.1, 2130706433. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(bare, NULL, &hints, &res) != 0)
		return false;			/* a name: checked at connect time */
	for (struct addrinfo *ai = res; ai != NULL && !refused; ai = ai->ai_next)
		refused = DestinationRefused(ai->ai_addr, buf, buflen);
	freeaddrinfo(res);
	return refused;
}
