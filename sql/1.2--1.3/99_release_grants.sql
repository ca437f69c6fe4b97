-- sql/1.2--1.3/99_release_grants.sql — runs last (as in 1.0--1.1 and 1.1--1.2).
--
-- Roles that already hold a bundle (granted_bundles: grant_role under the
-- old version) get every member this update added to it, as grant_role
-- gives them in a fresh install; the feature files above only insert their
-- new functions and tables into bundle_members.
--
-- PostgreSQL records every GRANT run inside an extension script as an
-- initial privilege of the object (pg_init_privs), and pg_dump leaves
-- initial privileges out of a dump: a dump of the updated database would
-- restore without these grants. They are the DBA's grants (grant_role),
-- not the extension's, so they are taken out of pg_init_privs again, for
-- every member object, whichever script granted them. No GRANT or REVOKE
-- can do this: inside an extension script both are recorded as initial
-- privileges, and a REVOKE after the GRANT would take the grant itself.
-- A fresh install (sql/install.sql) grants nothing, so it needs none of this. TAP 100 checks that
-- an updated database has the same ACLs, initial privileges and pg_dump
-- output as a fresh install whose roles got the same bundles.
DO $$
DECLARE g record;
BEGIN
  -- A role dropped since grant_role (DROP OWNED + DROP ROLE) leaves its
  -- granted_bundles row behind: skipped, or the whole update would fail.
  FOR g IN SELECT DISTINCT gb.role::pg_catalog.text AS role, m.fn, m.rel::pg_catalog.text AS rel,
                  m.columns::pg_catalog.text AS columns
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
             JOIN idemgate.bundle_members m ON m.bundle OPERATOR(pg_catalog.=) gb.bundle
            ORDER BY 1, 2, 3
  LOOP
    IF g.fn IS NOT NULL THEN
      EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', g.fn, g.role);
    ELSIF g.columns IS NOT NULL THEN
      -- the columns of a relation a bundle reads only in part (1.3)
      EXECUTE pg_catalog.format('GRANT SELECT (%s) ON %s TO %s',
                                (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ')
                                   FROM pg_catalog.unnest(g.columns::pg_catalog.text[]) AS c),
                                g.rel, g.role);
    ELSE
      EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %s', g.rel, g.role);
    END IF;
  END LOOP;
END $$;

UPDATE pg_catalog.pg_init_privs p
   SET initprivs = ARRAY(SELECT a FROM pg_catalog.unnest(p.initprivs) WITH ORDINALITY AS u(a, n)
                          WHERE NOT EXISTS (
                                SELECT 1 FROM pg_catalog.aclexplode(ARRAY[u.a]) x
                                  JOIN idemgate.granted_bundles gb
                                    ON gb.role::pg_catalog.oid OPERATOR(pg_catalog.=) x.grantee
                                 WHERE x.grantee OPERATOR(pg_catalog.<>) e.extowner)
                          ORDER BY u.n)
  FROM pg_catalog.pg_extension e, pg_catalog.pg_depend d
 WHERE e.extname OPERATOR(pg_catalog.=) 'idemgate'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) e.oid
   AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND p.classoid OPERATOR(pg_catalog.=) d.classid
   AND p.objoid OPERATOR(pg_catalog.=) d.objid
   AND p.privtype OPERATOR(pg_catalog.=) 'e';
-- A column's initial privileges (a bundle reading part of a table, 1.3)
-- hold nothing but the DBA's grants taken out above: no row, as in a
-- fresh install.
DELETE FROM pg_catalog.pg_init_privs p
 USING pg_catalog.pg_extension e, pg_catalog.pg_depend d
 WHERE e.extname OPERATOR(pg_catalog.=) 'idemgate'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) e.oid
   AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND p.classoid OPERATOR(pg_catalog.=) d.classid
   AND p.objoid OPERATOR(pg_catalog.=) d.objid
   AND p.objsubid OPERATOR(pg_catalog.<>) 0
   AND p.privtype OPERATOR(pg_catalog.=) 'e'
   AND pg_catalog.cardinality(p.initprivs) OPERATOR(pg_catalog.=) 0;
