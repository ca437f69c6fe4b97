/*-------------------------------------------------------------------------
 *
 * src/ledger/payload_hmac.h
 *	  Keyed hashes of payloads, the only form of a payload readers see.
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_PAYLOAD_HMAC_H
#define IDEMGATE_PAYLOAD_HMAC_H

#include "postgres.h"

/*
 * PayloadHmacHex returns the HMAC-SHA-256 of a payload hash under the
 * installation's secret, in hex (sql/1.2--1.3/60_readers.sql), or NULL on
 * a schema without the secret (before 1.3). Must be called inside SPI.
 */
extern char *PayloadHmacHex(bytea *payload_hash);

#endif
