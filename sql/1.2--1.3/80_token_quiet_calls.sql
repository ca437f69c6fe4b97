-- sql/1.2--1.3/80_token_quiet_calls.sql — approval tokens out of the
-- server log for every caller (docs/operations.md, "Approval tokens stay
-- out of the server log"). Role settings (grant_role's, 1.2) reach only
-- the role they are set on, not the members of a group that holds a
-- bundle, and only a superuser may set them; so the functions that take a
-- token keep it out of their own error reports: while they run, a failing
-- statement is not logged (log_min_error_statement = panic) and neither
-- are its parameters (log_parameter_max_length_on_error = 0). The statement
-- log before execution (log_statement) is the DBA's choice; grant_role,
-- called by a superuser, still turns it off for the roles it grants.
\ir ../functions/consume_approval.sql
\ir ../functions/peek_approval.sql
