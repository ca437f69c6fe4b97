/*-------------------------------------------------------------------------
 *
 * src/policy/destinations.c
 *	  Which network addresses effects may be sent to (README.md, "Where effects may be sent"): an
 *	  address must be public unless its host is listed in
 *	  idemgate.allowed_http_hosts.
 *
 * Design note. The check runs twice. register_endpoint (and the dispatcher
 * before each send) refuses a URL whose host is a numeric address in a
 * refused range, and libcurl's socket-open callback (src/delivery/http.c) refuses
 * the address a request is about to connect to, after DNS: a name that
 * resolves, or later re-resolves, to a private address cannot slip
 * through, whatever the scheme. DestinationRefused is called from inside
 * libcurl, so it must not allocate with palloc nor raise.
 *
 * What is refused: every block the IANA IPv4 and IPv6 Special-Purpose
 * Address Registries mark not globally reachable (RFC 6890 and its
 * updates), plus multicast, the rest of 240/4 and the deprecated IPv6
 * forms that hide an IPv4 address; the table below is the registries',
 * with their names, and the most specific entry wins, so a globally
 * reachable anycast address inside a refused block (192.0.0.9, 2001:1::1)
 * stays allowed. Translation prefixes that carry an IPv4 address
 * (64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address inside.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "policy/destinations.h"

/*
 * One block of a registry: the prefix (up to 16 bytes, network order) and
 * its length in bits, the registry's name, whether it is globally
 * reachable, and where an embedded IPv4 address starts (-1: none).
 */
typedef struct AddressBlock
{
	unsigned char prefix[16];
	int			bits;
	const char *name;
	bool		global;
	int			embedded_v4;
} AddressBlock;

/* IANA IPv4 Special-Purpose Address Registry, and the rest of class D/E. */
static const AddressBlock v4_blocks[] = {
	{{0, 0, 0, 0}, 8, "\"this network\"", false, -1},
	{{10, 0, 0, 0}, 8, "private-use", false, -1},
	{{100, 64, 0, 0}, 10, "shared address space (carrier-grade NAT)", false, -1},
	{{127, 0, 0, 0}, 8, "loopback", false, -1},
	{{169, 254, 0, 0}, 16, "link-local", false, -1},
	{{172, 16, 0, 0}, 12, "private-use", false, -1},
	{{192, 0, 0, 0}, 24, "IETF protocol assignments", false, -1},
	{{192, 0, 0, 9}, 32, "port control protocol anycast", true, -1},
	{{192, 0, 0, 10}, 32, "TURN anycast", true, -1},
	{{192, 0, 2, 0}, 24, "documentation (TEST-NET-1)", false, -1},
	{{192, 88, 99, 0}, 24, "deprecated 6to4 relay anycast", false, -1},
	{{192, 168, 0, 0}, 16, "private-use", false, -1},
	{{198, 18, 0, 0}, 15, "benchmarking", false, -1},
	{{198, 51, 100, 0}, 24, "documentation (TEST-NET-2)", false, -1},
	{{203, 0, 113, 0}, 24, "documentation (TEST-NET-3)", false, -1},
	{{224, 0, 0, 0}, 4, "multicast", false, -1},
	{{240, 0, 0, 0}, 4, "reserved", false, -1},
	{{255, 255, 255, 255}, 32, "limited broadcast", false, -1},
};

/* IANA IPv6 Special-Purpose Address Registry, and deprecated forms. */
static const AddressBlock v6_blocks[] = {
	{{0}, 128, "unspecified", false, -1},
	{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "loopback", false, -1},
	{{0}, 96, "IPv4-compatible (deprecated)", false, -1},
	{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, "IPv4-mapped", false, -1},
	{{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, "IPv4-translated", false, -1},
	{{0, 0x64, 0xff, 0x9b}, 96, "IPv4-IPv6 translation", true, 12},
	{{0, 0x64, 0xff, 0x9b, 0, 1}, 48, "IPv4-IPv6 translation (local use)", false, -1},
	{{0x01, 0x00}, 64, "discard-only", false, -1},
	{{0x01, 0x00, 0, 0, 0, 1}, 64, "dummy IPv6 prefix", false, -1},
	{{0x20, 0x01}, 23, "IETF protocol assignments", false, -1},
	{{0x20, 0x01, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128,
	 "port control protocol anycast", true, -1},
	{{0x20, 0x01, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 128, "TURN anycast", true, -1},
	{{0x20, 0x01, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, 128,
	 "DNS-SD service registration protocol anycast", true, -1},
	{{0x20, 0x01, 0, 0x03}, 32, "AMT", true, -1},
	{{0x20, 0x01, 0, 0x04, 0x01, 0x12}, 48, "AS112-v6", true, -1},
	{{0x20, 0x01, 0, 0x20}, 28, "ORCHIDv2", true, -1},
	{{0x20, 0x01, 0, 0x30}, 28, "drone remote ID entity tags", true, -1},
	{{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation", false, -1},
	{{0x20, 0x02}, 16, "6to4", true, 2},
	{{0x3f, 0xff}, 20, "documentation", false, -1},
	{{0x5f, 0x00}, 16, "segment routing (SRv6) SIDs", false, -1},
	{{0xfc, 0x00}, 7, "unique-local", false, -1},
	{{0xfe, 0x80}, 10, "link-local", false, -1},
	{{0xfe, 0xc0}, 10, "site-local (deprecated)", false, -1},
	{{0xff, 0x00}, 8, "multicast", false, -1},
};

/* PrefixMatches tells whether addr starts with the block's prefix. */
static bool
PrefixMatches(const unsigned char *addr, const AddressBlock *block)
{
	int			full = block->bits / 8;
	int			rest = block->bits % 8;

	if (memcmp(addr, block->prefix, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((addr[full] ^ block->prefix[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

/*
 * AddressRefused returns why addr (4 or 16 bytes) is refused, or NULL:
 * the most specific block of the table that holds it decides.
 */
static const char *
AddressRefused(const unsigned char *addr, bool v6)
{
	const AddressBlock *blocks = v6 ? v6_blocks : v4_blocks;
	int			n = v6 ? lengthof(v6_blocks) : lengthof(v4_blocks);
	const AddressBlock *best = NULL;

	for (int i = 0; i < n; i++)
		if (PrefixMatches(addr, &blocks[i]) && (best == NULL || blocks[i].bits > best->bits))
			best = &blocks[i];
	if (best == NULL)
		return NULL;
	if (best->embedded_v4 >= 0)
		return AddressRefused(addr + best->embedded_v4, false);
	return best->global ? NULL : best->name;
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

		why = AddressRefused((const unsigned char *) &in->sin_addr.s_addr, false);
		inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
	}
	else if (sa->sa_family == AF_INET6)
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;

		why = AddressRefused(in6->sin6_addr.s6_addr, true);
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
