\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.3'" to load this file. \quit

-- idemgate 1.2 → 1.3: the failure paths of the promise (docs/outbox.md,
-- "What a failure does"). Every schema change of version 1.3 lives in this
-- directory, one file per feature, applied in name order; the Makefile
-- assembles them into idemgate--1.2--1.3.sql. A fresh CREATE EXTENSION
-- runs the frozen scripts at the root and then this one, so a fresh
-- install and an updated one are the same by construction
-- (test/t/100_update.pl checks every update path).
