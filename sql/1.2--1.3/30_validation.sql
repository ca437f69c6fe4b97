-- sql/1.2--1.3/30_validation.sql — validation is enforced, repair is
-- bounded (src/ledger/record_validation.c). A run keeps the verdict of its latest
-- record_validation and how many were invalid: while the latest is
-- invalid, enqueue_effect and request_approval refuse with IG004; the
-- idemgate.max_repairs + 1-th invalid one ends the run failed_terminal
-- with a run dead letter of class invalid_output. Constant defaults, so
-- the claim's direct path keeps the table's shape (src/ledger/claim_direct.c).
ALTER TABLE idemgate.runs
    ADD COLUMN output_invalid boolean NOT NULL DEFAULT false,
    ADD COLUMN invalid_outputs integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN idemgate.runs.output_invalid IS
'The latest record_validation of this run was invalid: enqueue_effect and request_approval refuse (IG004)';
COMMENT ON COLUMN idemgate.runs.invalid_outputs IS
'How many record_validation calls of this run were invalid; one more than idemgate.max_repairs ends the run (invalid_output)';
