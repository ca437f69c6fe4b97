\echo Use "ALTER EXTENSION idemgate UPDATE TO '1.1'" to load this file. \quit

-- idemgate 1.0 → 1.1. Every schema change of version 1.1 lives in this
-- directory, one file per feature, applied in name order. A fresh
-- CREATE EXTENSION runs idemgate--1.0.sql and then this script, so a fresh
-- install and an updated one are the same by construction (TAP 100 checks).
