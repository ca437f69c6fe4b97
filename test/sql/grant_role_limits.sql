-- grant_role and revoke_role run as the extension's owner, so they check
-- the caller (src/policy/privileges.c, "Whose bundles"): a non-superuser with the
-- operator bundle may not hand bundles to (or take them from) a superuser
-- or a role with CREATEROLE, BYPASSRLS or REPLICATION it lacks, and sets
-- no superuser-only setting on anyone (42501; before 1.3 an operator could
-- put log_statement = none on the superuser); nobody may grant to a
-- reserved pg_* role; an unknown role is 42704.
\i test/sql/include/pgtap.psql
\i test/sql/include/as_role.psql
SELECT * FROM no_plan();
CREATE ROLE grl_operator;
CREATE ROLE grl_super SUPERUSER;
CREATE ROLE grl_bypass BYPASSRLS;
CREATE ROLE grl_repl REPLICATION;
CREATE ROLE grl_creator CREATEROLE;
CREATE ROLE grl_plain;
SELECT idemgate.grant_role('grl_operator', 'operator') \g /dev/null
GRANT USAGE ON SCHEMA tap TO grl_operator;

SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', 'grl_operator',
                        format('SELECT idemgate.grant_role(%L, %L)', r, b)),
                 '42501', m, 'an operator may not grant ' || b || ' to ' || r)
  FROM (VALUES ('grl_super', 'client', 'permission denied to manage the bundles of role "grl_super": it is a superuser'),
               (current_user, 'client', format('permission denied to manage the bundles of role "%s": it is a superuser', current_user)),
               ('grl_bypass', 'reader', 'permission denied to manage the bundles of role "grl_bypass": it has BYPASSRLS, which you do not'),
               ('grl_repl', 'approver', 'permission denied to manage the bundles of role "grl_repl": it has REPLICATION, which you do not'),
               ('grl_creator', 'operator', 'permission denied to manage the bundles of role "grl_creator": it has CREATEROLE, which you do not'))
       AS t(r, b, m);
SELECT throws_ok(format('SELECT pg_temp.as_role(%L, %L)', 'grl_operator', 'SELECT idemgate.revoke_role(''grl_super'', ''client'')'),
                 '42501', NULL, 'nor revoke one from a superuser');
SELECT is((SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'grl_super'::regrole), 0::bigint,
          'the superuser''s log settings are untouched');
-- A plain role: granted, but without superuser-only settings.
SELECT lives_ok(format('SELECT pg_temp.as_role(%L, %L)', 'grl_operator', 'SELECT idemgate.grant_role(''grl_plain'', ''approver'')'),
                'an operator grants approver to a plain role');
SELECT is((SELECT count(*) FROM idemgate.granted_bundles WHERE role = 'grl_plain'::regrole AND bundle = 'approver'), 1::bigint,
          'granted');
SELECT is((SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'grl_plain'::regrole), 0::bigint,
          'no superuser-only setting set by the operator (the calls keep tokens out of the log themselves)');
SELECT lives_ok(format('SELECT pg_temp.as_role(%L, %L)', 'grl_operator', 'SELECT idemgate.revoke_role(''grl_plain'', ''approver'')'),
                'and revokes it');
-- A superuser may grant to any role but a reserved one; then the settings are set.
SELECT lives_ok($$SELECT idemgate.grant_role('grl_bypass', 'reader')$$, 'a superuser grants to a BYPASSRLS role');
SELECT lives_ok($$SELECT idemgate.grant_role('grl_plain', 'approver')$$, 'a superuser grants approver');
SELECT is((SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'grl_plain'::regrole), 1::bigint,
          'with the role settings that keep tokens out of log_statement');
SELECT throws_ok($$SELECT idemgate.grant_role('pg_read_all_data', 'reader')$$, '42501', 'role "pg_read_all_data" is reserved',
                 'a reserved role: 42501');
SELECT throws_ok($$SELECT idemgate.grant_role('grl_no_such_role', 'reader')$$, '42704', NULL, 'an unknown role: 42704');
SELECT throws_ok($$SELECT idemgate.grant_role(4000000000::oid::regrole, 'reader')$$, '42704', NULL, 'an unknown role OID: 42704');

SELECT idemgate.revoke_role(r::regrole, b) FROM (VALUES ('grl_operator', 'operator'), ('grl_bypass', 'reader'), ('grl_plain', 'approver')) t(r, b) \g /dev/null
ALTER ROLE grl_plain RESET ALL;
REVOKE USAGE ON SCHEMA tap FROM grl_operator;
DROP ROLE grl_operator, grl_super, grl_bypass, grl_repl, grl_creator, grl_plain;
SELECT * FROM finish();
RESET search_path;
DROP EXTENSION pgtap;
DROP SCHEMA tap;
