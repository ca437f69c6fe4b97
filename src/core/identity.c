/*-------------------------------------------------------------------------
 *
 * src/core/identity.c
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
 *	 3. for separation of duties only, the confusable skeleton of Unicode
 *	    UTS #39 (ICU's spoof checker, uspoof_getSkeleton): Cyrillic
 *	    "аlice" and Latin "alice", or "paypa1" and "paypal", have the same
 *	    skeleton. Case folding before the skeleton would turn a capital I
 *	    (a confusable of l) into i, so the skeleton is also taken of the
 *	    fold of the skeleton, and both without combining dots above; two
 *	    identities are the same person when any of their forms are equal
 *	    (IdentityForms). This errs on the side of "same person", the safe
 *	    side for separation of duties.
 * An audience is an allow-list, where that side is the unsafe one: it
 * matches exactly after steps 1 and 2 (AudienceForm), so "rnary" is not
 * "mary" and "a1ice" not "alice".
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

#include "core/identity.h"

/* IcuCheck raises when an ICU call failed. */
static void
IcuCheck(UErrorCode status, const char *what)
{
	if (U_FAILURE(status))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compare identities: ICU %s failed: %s", what,
						u_errorName(status))));
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

/* The ICU services, opened once per backend. */
static const UNormalizer2 *nfkc_cf = NULL;
static const UNormalizer2 *nfkc = NULL;
static USpoofChecker *spoof = NULL;

static void
OpenIcu(void)
{
	UErrorCode	status = U_ZERO_ERROR;

	if (nfkc_cf == NULL)
	{
		nfkc_cf = unorm2_getNFKCCasefoldInstance(&status);
		IcuCheck(status, "unorm2_getNFKCCasefoldInstance");
	}
	if (nfkc == NULL)
	{
		nfkc = unorm2_getNFKCInstance(&status);
		IcuCheck(status, "unorm2_getNFKCInstance");
	}
	if (spoof == NULL)
	{
		spoof = uspoof_open(&status);
		IcuCheck(status, "uspoof_open");
	}
}

/* Normalize: unorm2_normalize with the normalizer in ctx. */
static int32_t
Normalize(const void *ctx, const UChar *src, int32_t srclen, UChar *dest, int32_t cap,
		  UErrorCode *status)
{
	return unorm2_normalize((const UNormalizer2 *) ctx, src, srclen, dest, cap, status);
}

/*
 * ToUtf16 reads s as UTF-8 (see the design note) into UTF-16; NULL when
 * its bytes are not valid UTF-8.
 */
static UChar *
ToUtf16(const char *s, int len, int32_t *n)
{
	const char *utf8;
	int			utf8_len;
	UErrorCode	status = U_ZERO_ERROR;
	UChar	   *u16;

	if (GetDatabaseEncoding() == PG_UTF8 || GetDatabaseEncoding() == PG_SQL_ASCII)
		utf8 = s;
	else
		utf8 = pg_server_to_any(s, len, PG_UTF8);
	utf8_len = (utf8 == s) ? len : strlen(utf8);
	if (!ValidUtf8((const unsigned char *) utf8, utf8_len))
		return NULL;
	u16 = palloc(sizeof(UChar) * (utf8_len + 1));
	u_strFromUTF8(u16, utf8_len + 1, n, utf8, utf8_len, &status);
	IcuCheck(status, "u_strFromUTF8");
	return u16;
}

/* Trim narrows [*start, *end) of u to drop White_Space at both ends. */
static void
Trim(const UChar *u, int32_t *start, int32_t *end)
{
	while (*start < *end)
	{
		UChar32		c;
		int32_t		next = *start;

		U16_NEXT(u, next, *end, c);
		if (!u_isUWhiteSpace(c))
			break;
		*start = next;
	}
	while (*end > *start)
	{
		UChar32		c;
		int32_t		prev = *end;

		U16_PREV(u, *start, prev, c);
		if (!u_isUWhiteSpace(c))
			break;
		*end = prev;
	}
}

/* ToUtf8 returns u[0..n) as a palloc'd UTF-8 string. */
static char *
ToUtf8(const UChar *u, int32_t n)
{
	char	   *out = palloc(4 * n + 1);
	UErrorCode	status = U_ZERO_ERROR;

	u_strToUTF8(out, 4 * n + 1, NULL, u, n, &status);
	IcuCheck(status, "u_strToUTF8");
	return out;
}

/* FoldTrimmed: NFKC_Casefold of u16, then trimmed; its length in *n. */
static UChar *
FoldTrimmed(const UChar *u16, int32_t len, int32_t *n)
{
	int32_t		end;
	int32_t		start = 0;
	UChar	   *folded = IcuTransform(Normalize, nfkc_cf, u16, len, &end, "unorm2_normalize");

	Trim(folded, &start, &end);
	*n = end - start;
	return folded + start;
}

/*
 * WithoutMarks drops the combining dots above (U+0307) of a skeleton (it is
 * NFD): a dotted capital I folds to i + U+0307, which looks like i. Other
 * marks stay: "josé" and "jose" are two people.
 */
static char *
WithoutMarks(const UChar *u, int32_t n)
{
	UChar	   *out = palloc(sizeof(UChar) * (n + 1));
	int32_t		len = 0;

	for (int32_t i = 0; i < n;)
	{
		UChar32		c;
		int32_t		at = i;

		U16_NEXT(u, i, n, c);
		if (c == 0x0307)
			continue;
		while (at < i)
			out[len++] = u[at++];
	}
	return ToUtf8(out, len);
}

/* AudienceForm; see identity.h. */
char *
AudienceForm(const char *s, int len)
{
	int32_t		n;
	UChar	   *u16 = ToUtf16(s, len, &n);
	UChar	   *folded;

	if (u16 == NULL)
		return AsciiFallback(s, len);
	OpenIcu();
	folded = FoldTrimmed(u16, n, &n);
	return ToUtf8(folded, n);
}

/*
 * IdentityForms fills forms[IDENTITY_FORMS] with the comparison forms of
 * s for separation of duties (see the design note): the skeleton of its
 * case-folded form, the skeleton of the fold of its skeleton (case
 * folding first would turn a capital I, a confusable of l, into i), and
 * both without combining dots above (a dotted capital I folds to
 * i + U+0307).
 */
#define IDENTITY_FORMS 4
static void
IdentityForms(const char *s, int len, char **forms)
{
	int32_t		n;
	int32_t		m;
	int32_t		k;
	UChar	   *u16 = ToUtf16(s, len, &n);
	UChar	   *folded;
	UChar	   *skeleton;
	UChar	   *compat;
	int32_t		start = 0;

	if (u16 == NULL)
	{
		for (int i = 0; i < IDENTITY_FORMS; i++)
			forms[i] = AsciiFallback(s, len);
		return;
	}
	OpenIcu();
	folded = FoldTrimmed(u16, n, &m);
	skeleton = IcuTransform(Skeleton, spoof, folded, m, &k, "uspoof_getSkeleton");
	forms[0] = ToUtf8(skeleton, k);
	forms[2] = WithoutMarks(skeleton, k);

	compat = IcuTransform(Normalize, nfkc, u16, n, &m, "unorm2_normalize");
	Trim(compat, &start, &m);
	skeleton = IcuTransform(Skeleton, spoof, compat + start, m - start, &k, "uspoof_getSkeleton");
	folded = IcuTransform(Normalize, nfkc_cf, skeleton, k, &m, "unorm2_normalize");
	skeleton = IcuTransform(Skeleton, spoof, folded, m, &k, "uspoof_getSkeleton");
	forms[1] = ToUtf8(skeleton, k);
	forms[3] = WithoutMarks(skeleton, k);
}

/* SameIdentity; see identity.h. */
bool
SameIdentity(const char *a, const char *b)
{
	char	   *fa[IDENTITY_FORMS];
	char	   *fb[IDENTITY_FORMS];

	IdentityForms(a, strlen(a), fa);
	IdentityForms(b, strlen(b), fb);
	for (int i = 0; i < IDENTITY_FORMS; i++)
		for (int j = 0; j < IDENTITY_FORMS; j++)
			if (strcmp(fa[i], fb[j]) == 0)
				return true;
	return false;
}
