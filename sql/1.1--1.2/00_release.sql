\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.2'" to load this file. \quit

-- idemgate 1.1 → 1.2. Every schema change of version 1.2 lives in this
-- directory, one file per feature, applied in name order; the Makefile
-- assembles them into idemgate--1.1--1.2.sql. A fresh CREATE EXTENSION
-- runs idemgate--1.0.sql, idemgate--1.0--1.1.sql (both frozen) and then
-- this script, so a fresh install and an updated one are the same by
-- construction (test/t/100_update.pl checks both update paths).
