/*-------------------------------------------------------------------------
 *
 * src/ledger/payload_hmac.c
 *	  Keyed hashes of payloads for events (docs/operations.md, "Who sees
 *	  what").
 *
 * A bare SHA-256 of a payload lets anyone who reads it confirm a guess
 * ("was the amount 4471?"). Events and key_history, which readers see,
 * carry HMAC-SHA-256(secret, payload hash) instead, with a secret made at
 * install that only the extension owner reads (idemgate.installation_secret,
 * its HMAC pads precomputed so SQL computes the same value:
 * idemgate.payload_hmac). Two events of one payload show the same value;
 * nobody but the owner can compute it for a payload of their choosing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "ledger/payload_hmac.h"
#include "citus/statements.h"

static SavedStatement hmac_stmt = {
	"SELECT idemgate.payload_hmac($1)",
	1, {BYTEAOID}
};

/* PayloadHmacHex; see payload_hmac.h. */
char *
PayloadHmacHex(bytea *payload_hash)
{
	Datum		value = PointerGetDatum(payload_hash);
	bool		isnull;
	Datum		d;

	if (!OidIsValid(IdemgateRelid("installation_secret")))
		return NULL;
	d = ExecSavedValue(&hmac_stmt, &value, NULL, false, SPI_OK_SELECT,
					   "could not compute a payload HMAC", &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}
