-- sql/1.1--1.2/90_token_quiet_roles.sql
--
-- Roles that already hold client or approver (granted under an earlier
-- version) get the role settings grant_role gives such roles from 1.2 on,
-- so that approval tokens stay out of the server log (docs/operations.md,
-- "Approval tokens stay out of the server log"; src/privileges.c). A role
-- dropped since its grant leaves its granted_bundles row behind: skipped.
DO $$
DECLARE r record; s record;
BEGIN
  FOR r IN SELECT DISTINCT gb.role::pg_catalog.text AS role
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles pr ON pr.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
            WHERE gb.bundle OPERATOR(pg_catalog.=) ANY ('{client,approver}'::pg_catalog.text[])
            ORDER BY 1
  LOOP
    FOR s IN SELECT * FROM (VALUES ('log_min_error_statement', 'panic'),
                                   ('log_error_verbosity', 'terse'),
                                   ('log_statement', 'none'),
                                   ('log_min_duration_statement', '-1'),
                                   ('log_parameter_max_length', '0'),
                                   ('log_parameter_max_length_on_error', '0')) AS t(name, value)
    LOOP
      EXECUTE pg_catalog.format('ALTER ROLE %s SET %s = %L', r.role, s.name, s.value);
    END LOOP;
  END LOOP;
END $$;
