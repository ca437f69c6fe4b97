-- Separation of duties and audiences compare identities normalised
-- (README.md, "Security"; src/core/identity.c): NFKC case-folded (which also
-- removes U+200B zero-width space, U+FEFF, U+00AD soft hyphen, U+2060 word
-- joiner ...) and trimmed; for separation of duties also the UTS #39
-- confusable skeleton (ICU's spoof checker), so fullwidth and Cyrillic
-- look-alikes of the requester are the requester. An audience matches
-- only exactly after folding (1.3).
-- Before 1.1 the bytes were compared: with requested_by 'alice',
-- approvers 'Alice', 'alice ' and 'alice<U+200B>' were accepted.
-- Identities are built from UTF-8 bytes (pg_temp.u) so the file works in
-- any server encoding that can hold them. pgTAP.
\i test/sql/include/pgtap.psql
-- u(hex): the UTF-8 text with these bytes.
CREATE FUNCTION pg_temp.u(hex text) RETURNS text LANGUAGE sql AS $$
SELECT convert_from(decode(hex, 'hex'), 'UTF8') $$;
-- ask(key, audience, requested_by): a run awaiting approval; its token.
CREATE FUNCTION pg_temp.ask(k text, aud text[], req text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record; a record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  SELECT * INTO a FROM idemgate.request_approval(k, c.lease_owner, c.version,
    '{"type": "identities_mail", "target": "t", "payload": {}}', '1 hour', NULL, aud, req);
  RETURN a.token;
END $$;
SELECT * FROM no_plan();

-- The identities used below, as text and as their UTF-8 bytes.
SELECT is(encode(convert_to(pg_temp.u(h), 'UTF8'), 'hex'), h, name) FROM (VALUES
  ('alice + U+200B', '616c696365e2808b'),
  ('U+FEFF + ALICE', 'efbbbf414c494345'),
  ('al + U+00AD + ice', '616cc2ad696365'),
  ('alice + U+2060', '616c696365e281a0'),
  ('josé precomposed', '6a6f73c3a9'),
  ('jose + U+0301 decomposed', '6a6f7365cc81'),
  ('JOSÉ precomposed capital', '4a4f53c389')
) t(name, h);

-- Requested by 'alice': none of these forms of alice may decide.
SELECT pg_temp.ask('id-1', NULL, 'alice') AS t1 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t1', 'approve', a)), 'invalid', who || ' may not decide')
FROM (VALUES ('Alice', 'Alice'), ('alice (trailing space)', 'alice '),
             ('  ALICE (leading spaces)', '  ALICE'), ('alice tab', E'alice\t'),
             ('alice + U+200B', pg_temp.u('616c696365e2808b')),
             ('U+FEFF + ALICE', pg_temp.u('efbbbf414c494345')),
             ('al + U+00AD + ice', pg_temp.u('616cc2ad696365')),
             ('alice + U+2060', pg_temp.u('616c696365e281a0')),
             ('alice + U+00A0 (no-break space)', pg_temp.u('616c696365c2a0'))) t(who, a);
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'id-1'), 'awaiting_human', 'id-1 still awaits a human');
-- Someone else may.
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t1', 'approve', 'bob')), 'approved', 'bob may');
SELECT is((SELECT state FROM idemgate.runs WHERE idempotency_key = 'id-1'), 'approved', 'id-1 approved');

-- Requested by josé (precomposed é): the decomposed form and the capital
-- are the same person; 'jose' (no accent) is someone else.
SELECT pg_temp.ask('id-2', NULL, pg_temp.u('6a6f73c3a9')) AS t2 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t2', 'approve', pg_temp.u('6a6f7365cc81'))), 'invalid',
          'josé decomposed is the requester');
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t2', 'approve', pg_temp.u('4a4f53c389'))), 'invalid',
          'JOSÉ is the requester');
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t2', 'reject', 'jose')), 'rejected', 'jose is someone else');

-- An audience matches normalised too: {'Bob', decomposed josé}.
SELECT pg_temp.ask('id-3', ARRAY['Bob', pg_temp.u('6a6f7365cc81')], 'alice') AS t3 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t3', 'approve', 'carol')), 'invalid', 'carol is not in the audience');
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t3', 'approve', 'alice')), 'invalid', 'nor is the requester');
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t3', 'approve', pg_temp.u('e2808b626f6220'))), 'approved',
          'U+200B + bob + space is Bob');
SELECT pg_temp.ask('id-4', ARRAY['Bob', pg_temp.u('6a6f7365cc81')], 'alice') AS t4 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t4', 'approve', pg_temp.u('4a4f53c389'))), 'approved',
          'JOSÉ precomposed is josé decomposed');

-- An audience of only the requester, in another spelling, is refused when
-- the approval is requested (nobody could decide it).
SELECT throws_ok($$SELECT pg_temp.ask('id-5', ARRAY['ALICE ', pg_temp.u('616c696365e2808b')], 'alice')$$,
                 '22023', 'argument "audience" names only the requester "alice"', 'an audience of only the requester');
SELECT is((SELECT count(*) FROM idemgate.approvals WHERE idempotency_key = 'id-5'), 0::bigint, 'no approval written');

-- Look-alikes are the same person (1.2): fullwidth U+FF21 "Ａlice",
-- Cyrillic U+0430 "аlice", Cyrillic U+0410 capital "Аlice", Greek
-- U+03BF "bοb" for bob, and the digit one for l ("a1ice"); "alicia" is
-- someone else.
SELECT pg_temp.ask('id-6', NULL, 'alice') AS t6 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t6', 'approve', a)), 'invalid', who || ' may not decide')
FROM (VALUES ('fullwidth Ａlice', pg_temp.u('efbca16c696365')),
             ('Cyrillic а + lice', pg_temp.u('d0b06c696365')),
             ('Cyrillic А + lice', pg_temp.u('d0906c696365')),
             ('a1ice (digit one)', 'a1ice')) t(who, a);
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t6', 'approve', 'alicia')), 'approved', 'alicia is someone else');
-- 1.3: the skeleton also of the unfolded form, and without combining dots
-- above: a capital I (a confusable of l), a dotted capital I and an I with
-- a combining dot are alice too, as are the other look-alikes of alice
-- (josé and jose stay two people, above).
-- Each look-alike faces an approval of its own, so one that got through
-- cannot make the next ones pass.
CREATE FUNCTION pg_temp.decide(k text, aud text[], req text, who text) RETURNS text LANGUAGE sql AS $$
SELECT outcome FROM idemgate.consume_approval(pg_temp.ask(k, aud, req), 'approve', who) $$;
SELECT pg_temp.ask('id-8', NULL, 'alice') AS t8 \gset
SELECT is(pg_temp.decide('id-8-' || md5(who), NULL, 'alice', a), 'invalid', who || ' may not decide')
FROM (VALUES ('aIice (capital I)', 'aIice'),
             ('AL + U+0130 + CE', pg_temp.u('414cc4b04345')),
             ('AlI + U+0307 + ce', pg_temp.u('416c49cc876365')),
             ('ALICE', 'ALICE'),
             ('AIice', 'AIice'),
             ('al + U+0131 dotless i + ce', pg_temp.u('616cc4b16365')),
             ('alic + Cyrillic e', pg_temp.u('616c6963d0b5')),
             ('a + U+217C small roman fifty + ice', pg_temp.u('61e285bc696365')),
             ('fullwidth alice', pg_temp.u('efbd81efbd8cefbd89efbd83efbd85')),
             ('al + Greek iota + ce', pg_temp.u('616cceb96365')),
             ('a1ice', 'a1ice'), ('A1ICE', 'A1ICE'),
             ('ali + U+0307 + ce', pg_temp.u('616c69cc876365'))) t(who, a);
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t8', 'approve', 'bob')), 'approved', 'bob still may');

-- An audience is an allow-list (1.3): exact after NFKC case folding and
-- trimming, nothing looser. Look-alikes of its members are refused; the
-- legitimate spellings are accepted.
SELECT pg_temp.ask('id-7', ARRAY['bob'], 'alice') AS t7 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t7', 'approve', pg_temp.u('62cebf62'))), 'invalid',
          'b + Greek omicron + b is not bob');
SELECT pg_temp.ask('id-9', ARRAY['mary', 'alice', 'ceo@corp.com'], 'zed') AS t9 \gset
SELECT is(pg_temp.decide('id-9-' || md5(who), ARRAY['mary', 'alice', 'ceo@corp.com'], 'zed', a), 'invalid',
          who || ' is not in the audience')
FROM (VALUES ('rnary', 'rnary'), ('a1ice', 'a1ice'), ('aIice', 'aIice'), ('ceo@corp.corn', 'ceo@corp.corn'),
             ('m + Cyrillic a + ry', pg_temp.u('6dd0b07279')), ('Cyrillic a + lice', pg_temp.u('d0b06c696365')),
             ('rn + ary (Greek alpha)', pg_temp.u('726eceb17279')), ('ceo@c0rp.com', 'ceo@c0rp.com')) t(who, a);
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t9', 'approve', ' Mary ')), 'approved',
          '" Mary " (case, spaces) is mary');
SELECT pg_temp.ask('id-10', ARRAY['mary'], 'zed') AS t10 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t10', 'approve', pg_temp.u('efbd8defbd81efbd92efbd99'))), 'approved',
          'fullwidth mary (an NFKC compatibility form) is mary');

-- The approval keeps the identities as given: only comparisons normalise.
SELECT results_eq($$SELECT requested_by, audience FROM idemgate.approvals WHERE idempotency_key = 'id-3'$$,
                  $$VALUES ('alice', ARRAY['Bob', pg_temp.u('6a6f7365cc81')])$$, 'identities stored as given');

DELETE FROM idemgate.outbox WHERE idempotency_key LIKE 'id-%';
DELETE FROM idemgate.approvals WHERE idempotency_key LIKE 'id-%';
DELETE FROM idemgate.runs WHERE idempotency_key LIKE 'id-%';

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
