-- sql/functions/set_effect_policy.sql

CREATE OR REPLACE FUNCTION idemgate.set_effect_policy(effect_type text,
                                                      requires_approval boolean DEFAULT false,
                                                      requires_requester boolean DEFAULT false,
                                                      review_sample real DEFAULT 0,
                                                      cancel_window interval DEFAULT NULL,
                                                      actor text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'idemgate_set_effect_policy';
COMMENT ON FUNCTION idemgate.set_effect_policy(text, boolean, boolean, real, interval, text) IS
'Set the policy of an effect type (all defaults = no restriction): requires_approval, requires_requester, review_sample (0..1), cancel_window; audited with actor (default: the calling role). Takes effect for every enqueue_effect and request_approval that starts after it commits';
REVOKE ALL ON FUNCTION idemgate.set_effect_policy(text,boolean,boolean,real,interval,text) FROM PUBLIC;
