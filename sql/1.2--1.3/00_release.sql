\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.3'" to load this file. \quit

-- idemgate 1.2 → 1.3: the failure paths of the promise (docs/outbox.md,
-- "What a failure does"). Every schema change of version 1.3 lives in this
-- directory, one file per feature, applied in name order; the Makefile
-- assembles them into idemgate--1.2--1.3.sql, each \ir line replaced by the
-- definition it names (sql/functions, sql/tables, sql/views). A fresh
-- CREATE EXTENSION runs idemgate--1.3.sql, made from sql/install.sql and
-- the same definitions; test/t/100_update.pl checks that an install
-- updated from every release equals it.
