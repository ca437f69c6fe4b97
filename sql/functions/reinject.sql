-- sql/functions/reinject.sql

CREATE OR REPLACE FUNCTION idemgate.reinject(id bigint, actor text, payload jsonb DEFAULT NULL) RETURNS boolean
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_reinject';
COMMENT ON FUNCTION idemgate.reinject(bigint, text, jsonb) IS
'Reinject a dead letter once: an effect goes back to pending (attempts reset, same effect_id and key) and a failed_terminal run it ended back to approved; a run letter to failed_retryable. With payload (a JSON object), an effect the provider rejected is replaced by a new effect (new effect_id and key, replaces = the old one) carrying it (IG002 for any other class). False when already reinjected, IG003 for an unknown id';
REVOKE ALL ON FUNCTION idemgate.reinject(bigint,text,jsonb) FROM PUBLIC;
