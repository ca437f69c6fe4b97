-- sql/functions/reinject_all.sql

CREATE OR REPLACE FUNCTION idemgate.reinject_all(actor text, effect_type text DEFAULT NULL,
                                                 since timestamptz DEFAULT NULL) RETURNS integer
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject_all';
COMMENT ON FUNCTION idemgate.reinject_all(text, text, timestamptz) IS
'Reinject every open dead letter (only effects of effect_type when given, only those dead since since when given); returns how many';
REVOKE ALL ON FUNCTION idemgate.reinject_all(text,text,timestamp with time zone) FROM PUBLIC;
