-- PostgreSQL's permission errors on idemgate's objects name the bundles
-- that hold them (1.3, src/core/permission_hints.c): a client credential
-- calling an approver function used to get a plain "permission denied".
-- Every function and relation of idemgate.bundle_members is tried by a
-- role with a bundle that lacks it; each query carries, as a comment, the
-- bundles bundle_members says, so the HINT below it shows whether
-- src/core/permission_hints.c's table still agrees. Trigger functions are
-- skipped (PostgreSQL refuses to call them directly). The NULL arguments
-- are subqueries: a strict function of NULL constants is folded to NULL
-- by the planner before any permission check.
CREATE EXTENSION IF NOT EXISTS idemgate;
SET client_min_messages = warning;
CREATE ROLE ph_client;
CREATE ROLE ph_approver;
CREATE ROLE ph_reader;
CREATE ROLE ph_nobody;
SELECT idemgate.grant_role('ph_client', 'client');
SELECT idemgate.grant_role('ph_approver', 'approver');
SELECT idemgate.grant_role('ph_reader', 'reader');
RESET client_min_messages;
\set VERBOSITY default
\set ECHO queries
-- A role without any bundle.
SET ROLE ph_nobody;
SELECT idemgate.claim('k', '{}');
RESET ROLE;
-- Every function.
WITH fns AS (
  SELECT m.fn::regprocedure AS p, string_agg(m.bundle, ', ' ORDER BY m.bundle) AS bundles,
         array_agg(m.bundle) AS held
    FROM idemgate.bundle_members m WHERE m.fn IS NOT NULL GROUP BY 1
)
SELECT format('SET ROLE %I', 'ph_' || r.bundle),
       format('SELECT idemgate.%s(%s) /* in: %s */', pr.proname::text COLLATE "C",
              (SELECT coalesce(string_agg('(SELECT NULL::' || format_type(t, NULL) || ')', ', '), '')
                 FROM unnest(pr.proargtypes) t), f.bundles),
       'RESET ROLE'
  FROM fns f JOIN pg_proc pr ON pr.oid = f.p
  CROSS JOIN LATERAL (SELECT b AS bundle FROM unnest(ARRAY['client', 'approver', 'reader']) b
                       WHERE b <> ALL (f.held) LIMIT 1) r
 WHERE pr.prorettype <> 'trigger'::regtype
 ORDER BY pr.proname COLLATE "C", f.p::text COLLATE "C"
\gexec
-- Every view and table.
WITH rels AS (
  SELECT m.rel, string_agg(m.bundle, ', ' ORDER BY m.bundle) AS bundles, array_agg(m.bundle) AS held
    FROM idemgate.bundle_members m WHERE m.rel IS NOT NULL GROUP BY 1
)
SELECT format('SET ROLE %I', 'ph_' || r.bundle),
       format('SELECT count(*) FROM %s /* in: %s */', x.rel, x.bundles),
       'RESET ROLE'
  FROM rels x
  CROSS JOIN LATERAL (SELECT b AS bundle FROM unnest(ARRAY['client', 'approver', 'reader']) b
                       WHERE b <> ALL (x.held) LIMIT 1) r
 ORDER BY x.rel::text COLLATE "C"
\gexec
\set ECHO all
SET client_min_messages = warning;
SELECT idemgate.revoke_role('ph_client', 'client');
SELECT idemgate.revoke_role('ph_approver', 'approver');
SELECT idemgate.revoke_role('ph_reader', 'reader');
DROP ROLE ph_client, ph_approver, ph_reader, ph_nobody;
