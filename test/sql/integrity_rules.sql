-- Integrity rules that 1.0 kept with CHECK constraints on the hot tables
-- (runs.idempotency_key 1..512 bytes, runs.state, outbox.state) and with
-- the foreign keys of outbox and approvals to runs are kept by the C code
-- since 1.1 (idemgate--1.0--1.1.sql, part 50_performance.sql: a CHECK costs ~10 µs per
-- write through SPI in PostgreSQL 15, a foreign key a trigger query per
-- row). This file shows that no function lets a bad value or an orphan in,
-- and that rows written through every path satisfy the rules. pgTAP.
\i test/sql/include/pgtap.psql
-- owner(k): the lease owner of run k (the caller that claimed it).
CREATE FUNCTION pg_temp.owner(k text) RETURNS uuid LANGUAGE sql AS $$
  SELECT lease_owner FROM idemgate.runs WHERE idempotency_key = k
$$;
SELECT * FROM no_plan();

-- The constraints are gone (so nothing but the C code guards the rules).
SELECT is_empty($$SELECT conrelid::regclass, conname FROM pg_constraint
                   WHERE conrelid IN ('idemgate.runs'::regclass, 'idemgate.outbox'::regclass) AND contype = 'c'$$,
                'no CHECK constraint on runs or outbox');

-- Key length: 0 and 513 bytes are refused by every function that takes a
-- new key (also 171 three-byte characters + 2 = 515 bytes); 512 bytes (also
-- as 170 three-byte characters + 2) are accepted.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT * FROM idemgate.claim('', '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim(repeat('k', 513), '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.claim(repeat('€', 171) || 'xx', '{}')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 515'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', repeat('k', 513), 'payload', '{}'::jsonb))$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.claim(jsonb_build_object('key', '', 'payload', '{}'::jsonb))$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 0'),
  ($$SELECT * FROM idemgate.claim_lease(repeat('k', 513), idemgate.hash_payload('{}'), gen_random_uuid(), '1 minute')$$, '22023', 'argument "key" must be between 1 and 512 bytes long, not 513')
) AS t(q, code, m);
SELECT is((SELECT outcome FROM idemgate.claim(repeat('k', 512), '{}')), 'claimed', '512 bytes: claimed');
SELECT is((SELECT outcome FROM idemgate.claim(repeat('€', 170) || 'xx', '{}')), 'claimed', '512 bytes in three-byte characters: claimed');
SELECT is((SELECT outcome FROM idemgate.claim('ir-orig', '{}')), 'claimed', 'ir-orig claimed');
SELECT ok(idemgate.cas_transition('ir-orig', pg_temp.owner('ir-orig'), 0, 'completed') IS NOT NULL,
          'ir-orig completed');
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT * FROM idemgate.supersede('ir-orig', repeat('k', 513), '{}', 'op', 'fix')$$, '22023', 'argument "new_key" must be between 1 and 512 bytes long, not 513'),
  ($$SELECT * FROM idemgate.supersede('ir-orig', '', '{}', 'op', 'fix')$$, '22023', 'argument "new_key" must be between 1 and 512 bytes long, not 0')
) AS t(q, code, m);

-- Run state: an unknown state name is refused before anything is written.
SELECT throws_ok(q, code, m, q) FROM (VALUES
  ($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'done')$$, '22023', 'argument "new_state" must be a run state, not "done"'),
  ($$SELECT idemgate.cas_transition('ir-orig', gen_random_uuid(), 0, 'Completed')$$, '22023', 'argument "new_state" must be a run state, not "Completed"')
) AS t(q, code, m);

-- Drive runs and effects through every state the API can reach.
SELECT is((SELECT outcome FROM idemgate.claim('ir-fail', '{}')), 'claimed', 'ir-fail claimed');
SELECT is(idemgate.fail('ir-fail', pg_temp.owner('ir-fail'), 0, 'x', 'boom', true),
          'failed_retryable', 'a retryable failure');
SELECT is((SELECT outcome FROM idemgate.claim('ir-term', '{}')), 'claimed', 'ir-term claimed');
SELECT is(idemgate.fail('ir-term', pg_temp.owner('ir-term'), 0, 'x', 'boom', false),
          'failed_terminal', 'a terminal failure');
SELECT is((SELECT outcome FROM idemgate.claim('ir-wait', '{}')), 'claimed', 'ir-wait claimed');
SELECT is((SELECT version FROM idemgate.request_approval('ir-wait', pg_temp.owner('ir-wait'), 0,
          '{"type": "ir_mail", "target": "t", "payload": {}}')), 1::bigint, 'approval requested');
SELECT is((SELECT outcome FROM idemgate.claim('ir-fx', '{}')), 'claimed', 'ir-fx claimed');
SELECT is((SELECT version FROM idemgate.enqueue_effect('ir-fx', pg_temp.owner('ir-fx'), 0,
       '[{"type": "ir_mail", "target": "a", "payload": {}}, {"type": "ir_mail", "target": "b", "payload": {}},
         {"type": "ir_mail", "target": "c", "payload": {}}, {"type": "ir_mail", "target": "d", "payload": {}}]')), 1::bigint,
          'four effects enqueued');
SELECT idemgate.set_actions_enabled(true, 'test', 'integrity rules') \g /dev/null
CREATE TEMP TABLE claimed AS SELECT * FROM idemgate.claim_effects('ir_mail', 10);
SELECT is((SELECT count(*) FROM claimed), 4::bigint, 'four claimed');
SELECT is((SELECT idemgate.complete_effect(effect_id, lease_owner, 'p-1') FROM claimed WHERE target = 'a'), true, 'a completed');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'transport', 'refused') FROM claimed WHERE target = 'b'), 'pending', 'b: transport, pending');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'server_error', '500') FROM claimed WHERE target = 'c'), 'unknown', 'c: server_error, unknown');
SELECT is((SELECT idemgate.fail_effect(effect_id, lease_owner, 'rejected', '400') FROM claimed WHERE target = 'd'), 'failed', 'd: rejected, failed');
-- An unknown error class is refused: it would otherwise pick the new state.
SELECT throws_ok($$SELECT idemgate.fail_effect(gen_random_uuid(), gen_random_uuid(), 'oops')$$, '22023', 'argument "error_class" must be a known error class, not "oops"',
                 'an unknown error class');

-- Every state reached is one of the allowed ones, and every key is 1..512 bytes.
SELECT results_eq($$SELECT state, count(*) FROM idemgate.runs
                     WHERE idempotency_key LIKE 'ir-%' OR idempotency_key IN (repeat('k', 512), repeat('€', 170) || 'xx')
                     GROUP BY state ORDER BY state$$,
                  $$VALUES ('approved', 1::bigint), ('awaiting_human', 1), ('completed', 1), ('failed_retryable', 1),
                           ('failed_terminal', 1), ('processing', 2)$$,
                  'runs in every state the API reaches');
SELECT results_eq($$SELECT state, count(*) FROM idemgate.outbox WHERE effect_type = 'ir_mail' GROUP BY state ORDER BY state$$,
                  $$VALUES ('completed', 1::bigint), ('failed', 1), ('pending', 1), ('unknown', 1)$$,
                  'effects in every state the API reaches');
SELECT is_empty($$SELECT idempotency_key, state FROM idemgate.runs
                   WHERE state NOT IN ('processing', 'awaiting_human', 'approved', 'completed', 'failed_retryable', 'failed_terminal')
                      OR octet_length(idempotency_key) NOT BETWEEN 1 AND 512$$,
                'no run with a bad state or key length');
SELECT is_empty($$SELECT effect_id, state FROM idemgate.outbox
                   WHERE state NOT IN ('pending', 'sending', 'completed', 'unknown', 'failed', 'cancelled')$$,
                'no effect with a bad state');
SELECT is((SELECT max(octet_length(idempotency_key)) FROM idemgate.runs), 512, 'the longest key is 512 bytes');

-- Every effect and approval has its run. The foreign keys are gone ...
SELECT is_empty($$SELECT conrelid::regclass, conname FROM pg_constraint
                   WHERE conrelid IN ('idemgate.outbox'::regclass, 'idemgate.approvals'::regclass) AND contype = 'f'$$,
                'no foreign key on outbox or approvals');
-- ... the inserting functions only write for a run they hold (a missing
-- run, or one that is not the caller's, gets a row of NULLs and nothing) ...
SELECT results_eq($$SELECT * FROM idemgate.enqueue_effect('ir-no-such-run', gen_random_uuid(), 0,
                      '{"type": "ir_mail", "target": "x", "payload": {}}')$$,
                  $$VALUES (NULL::uuid[], NULL::bigint, NULL::jsonb)$$, 'enqueue_effect for a run that does not exist: NULLs');
SELECT results_eq($$SELECT approval_id, token FROM idemgate.request_approval('ir-no-such-run', gen_random_uuid(), 0,
                      '{"type": "ir_mail", "target": "x", "payload": {}}')$$,
                  $$VALUES (NULL::uuid, NULL::text)$$, 'request_approval for a run that does not exist: NULLs');
SELECT is_empty($$SELECT 'effect' FROM idemgate.outbox WHERE idempotency_key = 'ir-no-such-run'
                  UNION ALL SELECT 'approval' FROM idemgate.approvals WHERE idempotency_key = 'ir-no-such-run'$$,
                'and nothing was written for it');
-- ... a finished run with an effect and an approval is purged with them
-- (purge.sql shows the same for every kind of child) ...
CREATE FUNCTION pg_temp.approved_and_delivered(k text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record; a record; e record;
BEGIN
  SELECT * INTO c FROM idemgate.claim(k, '{}');
  SELECT * INTO a FROM idemgate.request_approval(k, c.lease_owner, c.version,
      '{"type": "ir_purge", "target": "x", "payload": {}}');
  PERFORM idemgate.consume_approval(a.token, 'approve', 'ana');
  SELECT * INTO e FROM idemgate.claim_effects('ir_purge');
  PERFORM idemgate.complete_effect(e.effect_id, e.lease_owner);
END $$;
SELECT pg_temp.approved_and_delivered('ir-purged') \g /dev/null
SELECT results_eq($$SELECT r.state, (SELECT count(*) FROM idemgate.outbox o WHERE o.idempotency_key = r.idempotency_key),
                           (SELECT count(*) FROM idemgate.approvals a WHERE a.idempotency_key = r.idempotency_key)
                      FROM idemgate.runs r WHERE r.idempotency_key = 'ir-purged'$$,
                  $$VALUES ('completed', 1::bigint, 1::bigint)$$, 'a completed run with an effect and an approval');
UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days'
 WHERE idempotency_key = 'ir-purged';
SELECT ok(idemgate.purge('1 day') >= 1, 'purged');
SELECT is_empty($$SELECT 'run' FROM idemgate.runs WHERE idempotency_key = 'ir-purged'
                  UNION ALL SELECT 'effect' FROM idemgate.outbox WHERE idempotency_key = 'ir-purged'
                  UNION ALL SELECT 'approval' FROM idemgate.approvals WHERE idempotency_key = 'ir-purged'$$,
                'with its effect and its approval');
-- ... and no role but the owner may delete a run by hand.
SELECT is_empty($$SELECT grantee FROM information_schema.role_table_grants
                   WHERE table_schema = 'idemgate' AND table_name = 'runs' AND privilege_type = 'DELETE'
                     AND grantee <> (SELECT tableowner FROM pg_tables WHERE schemaname = 'idemgate' AND tablename = 'runs')$$,
                'DELETE on runs is granted to nobody');
-- So nothing in this database, after every test before this one, is an orphan.
SELECT is_empty($$SELECT 'effect', effect_id::text FROM idemgate.outbox o
                   WHERE NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = o.idempotency_key)
                  UNION ALL
                  SELECT 'approval', approval_id::text FROM idemgate.approvals a
                   WHERE NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = a.idempotency_key)$$,
                'every effect and approval has its run');

SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
