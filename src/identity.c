/*-------------------------------------------------------------------------
 *
 * src/identity.c
 *	  Normalising identities for separation of duties and audiences
 *	  (README.md, "Security"): "Alice", "alice ", "alice<U+200B>" and a decomposed
 *	  "é" must not pass for someone other than "alice" / a precomposed
 *	  "é".
 *
 * Design note. Two identities are the same person when their comparison
 * forms are equal. The form is built with ICU (which PostgreSQL itself
 * links), not hand-written tables:
 *	 1. NFKC case folding (NFKC_Casefold): compatibility forms such as
 *	    fullwidth "Ａlice" become "alice", case is folded for the whole of
 *	    Unicode, and default-ignorable code points (zero-width space, soft
 *	    hyphen, BOM, bidi controls, tags ...) are removed — they are
 *	    invisible, so two identities that differ only by them look the
 *	    same to a person;
 *	 2. White_Space trimmed at both ends;
 *	 3. the confusable skeleton of Unicode UTS #39 (ICU's spoof checker,
 *	    uspoof_getSkeleton): Cyrillic "аlice" and Latin "alice", or "paypa1"
 *	    and "paypal", have the same skeleton. This errs on the side of
 *	    "same person", which is the safe side for separation of duties.
 * The text is read as UTF-8 (converted from the database encoding; a
 * SQL_ASCII database's bytes are taken as UTF-8 when they are valid). Bytes
 * that are not valid UTF-8 are compared ASCII-lower-cased and trimmed.
 * Stored values are not changed: events and approvals keep what callers
 * sent, only comparisons use this form.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uspoof.h>
#include <unicode/ustring.h>

#include "mb/pg_wchar.h"

#include "identity.h"

/* IcuCheck raises when an ICU call failed. */
static void
IcuCheck(UErrorCode status, const char *what)
{
	if (U_FAILURE(status))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compare identities: ICU %s failed: %s", what, u_errorName(status))));
}

/*
 * IcuTransform runs one ICU string function into a palloc'd buffer, growing
 * it once when ICU says it was too small. fn(src, srclen, dest, cap,
 * &status) returns the needed length.
 */
typedef int32_t (*IcuStringFn) (const void *ctx, const UChar *src, int32_t srclen,
								UChar *dest, int32_t cap, UErrorCode *status);

static UChar *
IcuTransform(IcuStringFn fn, const void *ctx, const UChar *src, int32_t srclen,
			 int32_t *outlen, const char *what)
{
	int32_t		cap = srclen * 3 + 16;
	UChar	   *dest = palloc(sizeof(UChar) * cap);
	UErrorCode	status = U_ZERO_ERROR;
	int32_t		len = fn(ctx, src, srclen, dest, cap, &status);

	if (status == U_BUFFER_OVERFLOW_ERROR)
	{
		cap = len + 1;
		dest = repalloc(dest, sizeof(UChar) * cap);
		status = U_ZERO_ERROR;
		len = fn(ctx, src, srclen, dest, cap, &status);
	}
	IcuCheck(status, what);
	*outlen = len;
	return dest;
}

/* CaseFold: NFKC_Casefold of src. */
static int32_t
CaseFold(const void *ctx, const UChar *src, int32_t srclen, UChar *dest, int32_t cap,
		 UErrorCode *status)
{
	return unorm2_normalize((const UNormalizer2 *) ctx, src, srclen, dest, cap, status);
}

/* Skeleton: the UTS #39 confusable skeleton of src. */
static int32_t
Skeleton(const void *ctx, const UChar *src, int32_t srclen, UChar *dest, int32_t cap,
		 UErrorCode *status)
{
	return uspoof_getSkeleton((const USpoofChecker *) ctx, 0, src, srclen, dest, cap, status);
}

/* AsciiFallback lower-cases and trims bytes that are not valid UTF-8. */
static char *
AsciiFallback(const char *s, int len)
{
	char	   *out = palloc(len + 1);
	int			start = 0;
	int			end = len;

	while (start < end && (s[start] == ' ' || (s[start] >= 0x09 && s[start] <= 0x0D)))
		start++;
	while (end > start && (s[end - 1] == ' ' || (s[end - 1] >= 0x09 && s[end - 1] <= 0x0D)))
		end--;
	for (int i = start; i < end; i++)
		out[i - start] = pg_ascii_tolower((unsigned char) s[i]);
	out[end - start] = '\0';
	return out;
}

/* ValidUtf8 tells whether s[0..len) is valid UTF-8 without NUL bytes. */
static bool
ValidUtf8(const unsigned char *s, int len)
{
	for (int i = 0; i < len;)
	{
		int			l = pg_utf_mblen(s + i);

		if (s[i] == 0 || i + l > len || !pg_utf8_islegal(s + i, l))
			return false;
		i += l;
	}
	return true;
}

/* NormalizeIdentity; see identity.h. */
char *
NormalizeIdentity(const char *s, int len)
{
	static const UNormalizer2 *nfkc_cf = NULL;
	static USpoofChecker *spoof = NULL;
	const char *utf8;
	int			utf8_len;
	UErrorCode	status = U_ZERO_ERROR;
	int32_t		n;
	UChar	   *u16;
	UChar	   *folded;
	UChar	   *skeleton;
	int32_t		start = 0;
	int32_t		end;
	char	   *out;

	if (GetDatabaseEncoding() == PG_UTF8 || GetDatabaseEncoding() == PG_SQL_ASCII)
		utf8 = s;
	else
		utf8 = pg_server_to_any(s, len, PG_UTF8);
	utf8_len = (utf8 == s) ? len : strlen(utf8);
	if (!ValidUtf8((const unsigned char *) utf8, utf8_len))
		return AsciiFallback(s, len);

	if (nfkc_cf == NULL)
	{
		nfkc_cf = unorm2_getNFKCCasefoldInstance(&status);
		IcuCheck(status, "unorm2_getNFKCCasefoldInstance");
	}
	if (spoof == NULL)
	{
		spoof = uspoof_open(&status);
		IcuCheck(status, "uspoof_open");
	}

	u16 = palloc(sizeof(UChar) * (utf8_len + 1));
	u_strFromUTF8(u16, utf8_len + 1, &n, utf8, utf8_len, &status);
	IcuCheck(status, "u_strFromUTF8");

	folded = IcuTransform(CaseFold, nfkc_cf, u16, n, &end, "unorm2_normalize");
	while (start < end)
	{
		UChar32		c;
		int32_t		next = start;

		U16_NEXT(folded, next, end, c);
		if (!u_isUWhiteSpace(c))
			break;
		start = next;
	}
	while (end > start)
	{
		UChar32		c;
		int32_t		prev = end;

		U16_PREV(folded, start, prev, c);
		if (!u_isUWhiteSpace(c))
			break;
		end = prev;
	}
	skeleton = IcuTransform(Skeleton, spoof, folded + start, end - start, &n,
							"uspoof_getSkeleton");

	out = palloc(4 * n + 1);
	status = U_ZERO_ERROR;
	u_strToUTF8(out, 4 * n + 1, NULL, skeleton, n, &status);
	IcuCheck(status, "u_strToUTF8");
	return out;
}

/* SameIdentity; see identity.h. */
bool
SameIdentity(const char *a, const char *b)
{
	return strcmp(NormalizeIdentity(a, strlen(a)), NormalizeIdentity(b, strlen(b))) == 0;
}
