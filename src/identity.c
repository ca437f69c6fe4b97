/*-------------------------------------------------------------------------
 *
 * src/identity.c
 *	  Normalising identities for separation of duties and audiences
 *	  (README.md, "Security"): "Alice", "alice ", "alice<U+200B>" and a decomposed
 *	  "é" must not pass for someone other than "alice" / a precomposed
 *	  "é".
 *
 * Design note. An identity is compared in this form:
 *	 1. format characters (general category Cf: zero-width space U+200B,
 *	    BOM U+FEFF, soft hyphen U+00AD, word joiner U+2060, bidi controls,
 *	    tags ...) removed — they are invisible, so two identities that
 *	    differ only by them look the same to a person;
 *	 2. Unicode NFC (PostgreSQL's unicode_normalize), so composed and
 *	    decomposed accents are equal;
 *	 3. lower-cased code point by code point with the C.UTF-8 locale's
 *	    towlower (simple case mapping of the whole of Unicode, independent
 *	    of the database's collation), then NFC again;
 *	 4. White_Space trimmed at both ends.
 * The text is read as UTF-8 (converted from the database encoding; a
 * SQL_ASCII database's bytes are taken as UTF-8 when they are valid). Bytes
 * that are not valid UTF-8 are compared ASCII-lower-cased and trimmed.
 * Stored values are not changed: events and approvals keep what callers
 * sent, only comparisons use this form.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <locale.h>
#include <wctype.h>

#include "common/unicode_norm.h"
#include "mb/pg_wchar.h"

#include "identity.h"

/* Format characters (Unicode 15.1 general category Cf), sorted ranges. */
static const struct
{
	pg_wchar	first;
	pg_wchar	last;
}			format_chars[] = {
	{0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C}, {0x06DD, 0x06DD},
	{0x070F, 0x070F}, {0x0890, 0x0891}, {0x08E2, 0x08E2}, {0x180E, 0x180E},
	{0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x206F},
	{0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
	{0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
	{0xE0020, 0xE007F},
};

/* IsFormatChar tells whether c is in category Cf (binary search). */
static bool
IsFormatChar(pg_wchar c)
{
	int			lo = 0;
	int			hi = lengthof(format_chars) - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < format_chars[mid].first)
			hi = mid - 1;
		else if (c > format_chars[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* IsWhiteSpace tells whether c has the Unicode White_Space property. */
static bool
IsWhiteSpace(pg_wchar c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
		c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
		c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ToLower maps c to lower case with the C.UTF-8 locale (ASCII without it). */
static pg_wchar
ToLower(pg_wchar c)
{
	static locale_t utf8_locale = (locale_t) 0;
	static bool tried = false;

	if (!tried)
	{
		tried = true;
		utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t) 0);
	}
	if (utf8_locale != (locale_t) 0 && sizeof(wchar_t) >= 4)
		return (pg_wchar) towlower_l((wint_t) c, utf8_locale);
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
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
	const unsigned char *utf8;
	int			utf8_len;
	pg_wchar   *cps;
	pg_wchar   *nfc;
	int			n = 0;
	int			start;
	int			end;
	char	   *out;
	char	   *p;

	if (GetDatabaseEncoding() == PG_UTF8 || GetDatabaseEncoding() == PG_SQL_ASCII)
		utf8 = (const unsigned char *) s;
	else
		utf8 = (const unsigned char *) pg_server_to_any(s, len, PG_UTF8);
	utf8_len = (utf8 == (const unsigned char *) s) ? len : strlen((const char *) utf8);
	if (!ValidUtf8(utf8, utf8_len))
		return AsciiFallback(s, len);

	/* Decode, dropping format characters. */
	cps = palloc(sizeof(pg_wchar) * (utf8_len + 1));
	for (int i = 0; i < utf8_len;)
	{
		int			l = pg_utf_mblen(utf8 + i);
		pg_wchar	c = utf8_to_unicode(utf8 + i);

		i += l;
		if (!IsFormatChar(c))
			cps[n++] = c;
	}
	cps[n] = 0;

	nfc = unicode_normalize(UNICODE_NFC, cps);
	if (nfc == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	for (n = 0; nfc[n] != 0; n++)
		nfc[n] = ToLower(nfc[n]);
	nfc = unicode_normalize(UNICODE_NFC, nfc);
	if (nfc == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	for (n = 0; nfc[n] != 0; n++)
		;

	start = 0;
	end = n;
	while (start < end && IsWhiteSpace(nfc[start]))
		start++;
	while (end > start && IsWhiteSpace(nfc[end - 1]))
		end--;

	out = palloc(4 * (end - start) + 1);
	p = out;
	for (int i = start; i < end; i++)
	{
		unicode_to_utf8(nfc[i], (unsigned char *) p);
		p += pg_utf_mblen((unsigned char *) p);
	}
	*p = '\0';
	return out;
}

/* SameIdentity; see identity.h. */
bool
SameIdentity(const char *a, const char *b)
{
	return strcmp(NormalizeIdentity(a, strlen(a)), NormalizeIdentity(b, strlen(b))) == 0;
}
