-- sql/functions/reset_circuit.sql

CREATE OR REPLACE FUNCTION idemgate.reset_circuit(effect_type text, actor text) RETURNS boolean
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_reset_circuit';
COMMENT ON FUNCTION idemgate.reset_circuit(text, text) IS
'Close an endpoint''s circuit by hand: its held effects go out again at once; true when it was open; audited (event endpoint_circuit_reset); IG003 for a type without an endpoint';
REVOKE ALL ON FUNCTION idemgate.reset_circuit(text,text) FROM PUBLIC;
