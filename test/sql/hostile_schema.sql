-- hostile_schema: nothing the extension runs can be redirected by objects
-- planted in another schema on the caller's search_path (README.md, "Roles").
-- An unprivileged role plants, in schema public, functions and operators
-- that shadow pg_catalog's (now(), gen_random_uuid(), sha256(bytea),
-- =(text,text), =(uuid,uuid), +(timestamptz,interval), ||(jsonb,jsonb),
-- array_agg(text), ...). Each logs itself and, when run by a superuser, makes
-- the attacker superuser. A control query shows they DO run for unqualified
-- SQL under search_path = public, pg_catalog; then a superuser with that
-- search_path calls every idemgate function, and nothing planted runs.
CREATE EXTENSION IF NOT EXISTS idemgate;
\set VERBOSITY terse

CREATE ROLE hostile_attacker;
CREATE ROLE hostile_grantee;
GRANT USAGE, CREATE ON SCHEMA public TO hostile_attacker;

SET ROLE hostile_attacker;
CREATE TABLE public.hostile_log (hit text, by_role text);
GRANT INSERT ON public.hostile_log TO PUBLIC;
-- hostile_hit is the payload: record the call, escalate when it can.
CREATE FUNCTION public.hostile_hit(what text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO public.hostile_log (hit, by_role) VALUES (what, current_user);
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
    EXECUTE 'ALTER ROLE hostile_attacker SUPERUSER';
  END IF;
END $$;
-- Shadow functions with pg_catalog's exact signatures; each returns the real
-- result so that nothing looks wrong.
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END $$;
CREATE FUNCTION public.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END $$;
CREATE FUNCTION public.sha256(bytea) RETURNS bytea LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('sha256(bytea)'); RETURN pg_catalog.sha256($1); END $$;
CREATE FUNCTION public.jsonb_strip_nulls(jsonb) RETURNS jsonb LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('jsonb_strip_nulls(jsonb)'); RETURN pg_catalog.jsonb_strip_nulls($1); END $$;
CREATE FUNCTION public.jsonb_build_object(text, text) RETURNS jsonb LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('jsonb_build_object(text,text)'); RETURN pg_catalog.jsonb_build_object($1, $2); END $$;
CREATE FUNCTION public.date_part(text, interval) RETURNS double precision LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('date_part(text,interval)'); RETURN pg_catalog.date_part($1, $2); END $$;
CREATE FUNCTION public.octet_length(bytea) RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('octet_length(bytea)'); RETURN pg_catalog.octet_length($1); END $$;
CREATE FUNCTION public.hostile_text_accum(text[], text) RETURNS text[] LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM public.hostile_hit('array_agg(text)'); RETURN pg_catalog.array_append($1, $2); END $$;
CREATE AGGREGATE public.array_agg(text) (SFUNC = public.hostile_text_accum, STYPE = text[]);
-- Shadow operators with exact argument types.
CREATE FUNCTION public.hostile_op(what text, result boolean) RETURNS boolean LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$ BEGIN PERFORM public.hostile_hit(what); RETURN result; END $$;
CREATE FUNCTION public.hostile_text_eq(text, text) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('=(text,text)', $1 OPERATOR(pg_catalog.=) $2) $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.hostile_text_eq);
CREATE FUNCTION public.hostile_text_ne(text, text) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('<>(text,text)', $1 OPERATOR(pg_catalog.<>) $2) $$;
CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.hostile_text_ne);
CREATE FUNCTION public.hostile_uuid_eq(uuid, uuid) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('=(uuid,uuid)', $1 OPERATOR(pg_catalog.=) $2) $$;
CREATE OPERATOR public.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = public.hostile_uuid_eq);
CREATE FUNCTION public.hostile_int8_eq(bigint, bigint) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('=(bigint,bigint)', $1 OPERATOR(pg_catalog.=) $2) $$;
CREATE OPERATOR public.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.hostile_int8_eq);
CREATE FUNCTION public.hostile_bytea_eq(bytea, bytea) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('=(bytea,bytea)', $1 OPERATOR(pg_catalog.=) $2) $$;
CREATE OPERATOR public.= (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = public.hostile_bytea_eq);
CREATE FUNCTION public.hostile_ts_le(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('<=(timestamptz,timestamptz)', $1 OPERATOR(pg_catalog.<=) $2) $$;
CREATE OPERATOR public.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.hostile_ts_le);
CREATE FUNCTION public.hostile_ts_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql
AS $$ SELECT public.hostile_op('>(timestamptz,timestamptz)', $1 OPERATOR(pg_catalog.>) $2) $$;
CREATE OPERATOR public.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.hostile_ts_gt);
CREATE FUNCTION public.hostile_ts_pl(timestamptz, interval) RETURNS timestamptz LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$ BEGIN PERFORM public.hostile_hit('+(timestamptz,interval)'); RETURN $1 OPERATOR(pg_catalog.+) $2; END $$;
CREATE OPERATOR public.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = public.hostile_ts_pl);
CREATE FUNCTION public.hostile_ts_mi(timestamptz, timestamptz) RETURNS interval LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$ BEGIN PERFORM public.hostile_hit('-(timestamptz,timestamptz)'); RETURN $1 OPERATOR(pg_catalog.-) $2; END $$;
CREATE OPERATOR public.- (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.hostile_ts_mi);
CREATE FUNCTION public.hostile_jsonb_cat(jsonb, jsonb) RETURNS jsonb LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$ BEGIN PERFORM public.hostile_hit('||(jsonb,jsonb)'); RETURN $1 OPERATOR(pg_catalog.||) $2; END $$;
CREATE OPERATOR public.|| (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = public.hostile_jsonb_cat);
RESET ROLE;

-- Control: under search_path = public, pg_catalog, unqualified SQL run by a
-- superuser does call every planted object, and the attacker becomes
-- superuser. (So the checks below can fail.)
SET search_path = public, pg_catalog;
SELECT now() IS NOT NULL, clock_timestamp() IS NOT NULL, gen_random_uuid() IS NOT NULL,
       sha256('x'::bytea) IS NOT NULL, jsonb_strip_nulls('{}'::jsonb) IS NOT NULL,
       jsonb_build_object('a'::text, 'b'::text) IS NOT NULL,
       date_part('epoch', '1 hour'::interval) IS NOT NULL, octet_length('x'::bytea) IS NOT NULL,
       (SELECT array_agg(x) FROM (VALUES ('a'::text)) v(x)) IS NOT NULL,
       'a'::text = 'a'::text, 'a'::text <> 'b'::text,
       '00000000-0000-4000-8000-000000000000'::uuid = '00000000-0000-4000-8000-000000000000'::uuid,
       1::bigint = 1::bigint, 'x'::bytea = 'x'::bytea,
       '2026-01-01'::timestamptz <= '2026-01-02'::timestamptz,
       '2026-01-02'::timestamptz > '2026-01-01'::timestamptz,
       ('2026-01-01'::timestamptz + '1 day'::interval) IS NOT NULL,
       ('2026-01-02'::timestamptz - '2026-01-01'::timestamptz) IS NOT NULL,
       ('{}'::jsonb || '{}'::jsonb) IS NOT NULL;
RESET search_path;
SELECT hit, by_role FROM public.hostile_log ORDER BY hit;
SELECT rolsuper AS attacker_is_superuser FROM pg_roles WHERE rolname = 'hostile_attacker';
ALTER ROLE hostile_attacker NOSUPERUSER;
DELETE FROM public.hostile_log;

-- try(fn, q) runs q when idemgate has a function or view named fn (the
-- outbox, kill switch, endpoints, metrics and retention functions land in
-- other parts of the extension) and notes the outcome; its own statements
-- are qualified so that it runs nothing planted itself.
CREATE TEMP TABLE extra_calls (fn name, sqlstate text, message text);
CREATE FUNCTION pg_temp.try(fn name, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM pg_catalog.pg_proc p
   WHERE p.proname OPERATOR(pg_catalog.=) fn AND p.pronamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace;
  IF NOT FOUND THEN
    PERFORM 1 FROM pg_catalog.pg_class c
     WHERE c.relname OPERATOR(pg_catalog.=) fn AND c.relnamespace OPERATOR(pg_catalog.=) 'idemgate'::pg_catalog.regnamespace;
    IF NOT FOUND THEN
      RETURN;
    END IF;
  END IF;
  EXECUTE q;
  INSERT INTO pg_temp.extra_calls VALUES (fn, '00000', NULL);
EXCEPTION WHEN OTHERS THEN
  INSERT INTO pg_temp.extra_calls VALUES (fn, SQLSTATE, SQLERRM);
END $$;

-- Now every idemgate function, called by a superuser with the hostile path.
-- (Arguments are literals or psql variables, so the calls themselves use no
-- operator or function the attacker planted.)
SET search_path = public, pg_catalog;
SHOW search_path;
-- Run ledger: claim (new, duplicate), claim(jsonb), claim_lease, hash_payload,
-- renew_lease, cas_transition, fail (terminal: dead letter), supersede.
SELECT lease_owner AS o1, version AS v1 FROM idemgate.claim('hostile-1', '{"n": 1}', '5 minutes', 'hostile') \gset
SELECT outcome, state FROM idemgate.claim('hostile-1', '{"n": 1}');
SELECT lease_owner AS o2, version AS v2 FROM idemgate.claim('{"key": "hostile-2", "payload": {"n": 2}, "lease": "1 minute"}') \gset
SELECT idempotency_key, version FROM idemgate.claim_lease('hostile-3', idemgate.hash_payload('{"n": 3}'),
                                                          '00000000-0000-4000-8000-0000000000a3', '1 minute');
SELECT pg_catalog.length(idemgate.hash_payload('{"n": 3}')) AS hash_len;
SELECT idemgate.renew_lease('hostile-1', :'o1', :v1, '10 minutes') IS NOT NULL AS renewed;
SELECT idemgate.cas_transition('hostile-2', :'o2', :v2, 'completed', '{"ok": true}') AS cas_version;
SELECT idemgate.fail('hostile-3', '00000000-0000-4000-8000-0000000000a3', 0, 'boom', 'it broke', false) AS failed;
SELECT lease_owner AS o2b, version AS v2b FROM idemgate.supersede('hostile-2', 'hostile-2b', '{"n": 22}', 'op', 'redo') \gset
SELECT * FROM idemgate.validate('{"a": 1}', '{"type": "object", "required": ["a"]}');
-- Effects: enqueue_effect (the automatic path).
SELECT cardinality(effect_ids) AS effects, version FROM idemgate.enqueue_effect('hostile-2b', :'o2b', :v2b,
    '[{"type": "email", "target": "a@example.com", "payload": {}}, {"type": "crm", "target": "l-1", "payload": 1}]');
-- Approvals: request, hash_token, peek, consume (invalid, approved), reject, expire.
SELECT token AS t1 FROM idemgate.request_approval('hostile-1', :'o1', :v1,
    '{"type": "email", "target": "b@example.com", "payload": {}}', '1 hour',
    '{"title": "x", "model": "m", "validation_errors": []}', '{alice,bob}', 'bot') \gset
SELECT pg_catalog.length(idemgate.hash_token(:'t1')) AS hash_len;
SELECT status, card->>'title' AS title FROM idemgate.peek_approval(:'t1');
SELECT outcome FROM idemgate.consume_approval(:'t1', 'approve', 'bot');
SELECT outcome FROM idemgate.consume_approval('garbage', 'approve', 'alice');
SELECT outcome, cardinality(effect_ids) AS effects FROM idemgate.consume_approval(:'t1', 'approve', 'alice');
SELECT lease_owner AS o4, version AS v4 FROM idemgate.claim('hostile-4', '{"n": 4}') \gset
SELECT token AS t4 FROM idemgate.request_approval('hostile-4', :'o4', :v4,
    '{"type": "email", "target": "c@example.com", "payload": {}}') \gset
SELECT outcome FROM idemgate.consume_approval(:'t4', 'reject', 'carol', 'no');
SELECT lease_owner AS o5, version AS v5 FROM idemgate.claim('hostile-5', '{"n": 5}') \gset
SELECT token AS t5 FROM idemgate.request_approval('hostile-5', :'o5', :v5,
    '{"type": "email", "target": "d@example.com", "payload": {}}', '1 hour') \gset
-- Expire it while holding its row, so that the dispatcher's own periodic
-- expire_approvals (which skips held rows) leaves it to this call.
RESET search_path;
BEGIN;
UPDATE idemgate.approvals SET expires_at = now() - interval '1 second' WHERE idempotency_key = 'hostile-5';
SET search_path = public, pg_catalog;
SELECT idemgate.expire_approvals() >= 1 AS expired;
SELECT status FROM idemgate.peek_approval(:'t5');
COMMIT;
-- Privileges: grant_role and revoke_role.
SELECT idemgate.grant_role('hostile_grantee', 'client');
SELECT idemgate.grant_role('hostile_grantee', 'approver');
SELECT idemgate.revoke_role('hostile_grantee', 'approver');
SELECT idemgate.revoke_role('hostile_grantee', 'client');
-- Views.
SELECT count(*) > 0 AS history FROM idemgate.key_history;
SELECT count(*) > 0 AS statuses FROM idemgate.approval_status;
-- The rest of the extension, where present (outcomes checked below).
SELECT pg_temp.try('record_validation', format($$SELECT * FROM idemgate.record_validation('hostile-6', %L, 0,
    '{"a": 1}', '{"type": "object"}')$$,
    (SELECT lease_owner FROM idemgate.claim('hostile-6', '{"n": 6}'))));
SELECT pg_temp.try('register_endpoint', $$SELECT idemgate.register_endpoint('hostile-type', 'https://hostile.example/hook')$$);
SELECT pg_temp.try('claim_effects', $$SELECT * FROM idemgate.claim_effects('hostile-type', 5, '1 minute')$$);
SELECT pg_temp.try('complete_effect', $$SELECT idemgate.complete_effect('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000e2')$$);
SELECT pg_temp.try('fail_effect', $$SELECT idemgate.fail_effect('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000e2', 'transport', 'refused')$$);
SELECT pg_temp.try('resolve_effect', $$SELECT idemgate.resolve_effect('00000000-0000-4000-8000-0000000000e1', true, 'hostile')$$);
SELECT pg_temp.try('reinject', $$SELECT idemgate.reinject(0, 'hostile')$$);
SELECT pg_temp.try('reinject_all', $$SELECT idemgate.reinject_all('hostile', 'hostile-type')$$);
SELECT pg_temp.try('set_actions_enabled', $$SELECT idemgate.set_actions_enabled(true, 'hostile', 'keep on')$$);
SELECT pg_temp.try('actions_enabled', $$SELECT idemgate.actions_enabled()$$);
SELECT pg_temp.try('watch_workflow', $$SELECT idemgate.watch_workflow('hostile-wf', '1 hour')$$);
SELECT pg_temp.try('unwatch_workflow', $$SELECT idemgate.unwatch_workflow('hostile-wf')$$);
SELECT pg_temp.try('metrics', $$SELECT * FROM idemgate.metrics()$$);
SELECT pg_temp.try('prometheus', $$SELECT idemgate.prometheus()$$);
SELECT pg_temp.try('publish_alerts', $$SELECT idemgate.publish_alerts()$$);
SELECT pg_temp.try('alerts', $$SELECT count(*) FROM idemgate.alerts$$);
SELECT pg_temp.try('alert_instances', $$SELECT count(*) FROM idemgate.alert_instances$$);
SELECT pg_temp.try('dispatcher_status', $$SELECT * FROM idemgate.dispatcher_status()$$);
SELECT pg_temp.try('purge', $$SELECT idemgate.purge('100 years')$$);
SELECT pg_temp.try('purge_dead_letters', $$SELECT idemgate.purge_dead_letters('100 years')$$);
RESET search_path;
-- Each of them ran: an error of the call's own checks (IG003 for an unknown
-- effect or dead letter) is fine, it ran its statements first; a call that
-- could not run as written (changed signature, internal error) shows here.
SELECT fn, CASE WHEN sqlstate IN ('42883', '42725', '42P01', '42601', '42804', 'XX000')
                THEN sqlstate || ': ' || message ELSE 'ran' END AS outcome
FROM pg_temp.extra_calls ORDER BY fn, outcome;

-- Nothing planted ran, the attacker is not superuser, and the calls did
-- their work.
SELECT hit, by_role FROM public.hostile_log ORDER BY hit;
SELECT rolsuper AS attacker_is_superuser FROM pg_roles WHERE rolname = 'hostile_attacker';
SELECT idempotency_key, state FROM idemgate.runs WHERE idempotency_key LIKE 'hostile-%' ORDER BY 1;
SELECT count(*) AS effects FROM idemgate.outbox WHERE idempotency_key LIKE 'hostile-%';
SELECT idempotency_key, error_class FROM idemgate.dead_letters WHERE idempotency_key LIKE 'hostile-%' ORDER BY 1;

DROP OWNED BY hostile_attacker, hostile_grantee;
DROP ROLE hostile_attacker, hostile_grantee;
