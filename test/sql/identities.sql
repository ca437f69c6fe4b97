-- Separation of duties and audiences compare identities normalised
-- (README.md, "Security"; src/identity.c): NFKC case-folded (which also
-- removes U+200B zero-width space, U+FEFF, U+00AD soft hyphen, U+2060 word
-- joiner ...), trimmed, then the UTS #39 confusable skeleton (ICU's spoof
-- checker), so fullwidth and Cyrillic look-alikes are the same person.
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
SELECT pg_temp.ask('id-7', ARRAY['bob'], 'alice') AS t7 \gset
SELECT is((SELECT outcome FROM idemgate.consume_approval(:'t7', 'approve', pg_temp.u('62cebf62'))), 'approved',
          'b + Greek omicron + b is bob, in the audience');

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
