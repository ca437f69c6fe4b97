/*-------------------------------------------------------------------------
 *
 * src/policy/destinations.h
 *	  Which network addresses effects may be sent to (src/policy/destinations.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_DESTINATIONS_H
#define IDEMGATE_DESTINATIONS_H

#include "postgres.h"

#include <sys/socket.h>

/*
 * DestinationRefused tells whether an address is in a refused range
 * (loopback, private, link-local, ...); when it is, buf gets a message
 * naming the address and the range. Never allocates nor raises: safe
 * inside libcurl callbacks.
 */
extern bool DestinationRefused(const struct sockaddr *sa, char *buf, size_t buflen);

/*
 * NumericHostRefused does the same for a URL host written as a numeric
 * address (IPv6 with or without brackets); false for names, which are
 * checked at connect time. Never queries DNS.
 */
extern bool NumericHostRefused(const char *host, char *buf, size_t buflen);

#endif
