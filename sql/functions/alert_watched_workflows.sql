-- sql/functions/alert_watched_workflows.sql

-- Per watched workflow: when it was last seen (registered, claimed, or a
-- duplicate or recovery of one of its runs).
CREATE OR REPLACE FUNCTION idemgate.alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
SELECT w.workflow, w.expected_interval,
       GREATEST(w.created_at,
                (SELECT pg_catalog.max(r.created_at) FROM idemgate.runs r
                  WHERE r.workflow = w.workflow),
                (SELECT pg_catalog.max(e.at) FROM idemgate.events e
                  WHERE e.kind IN ('recovered', 'duplicate')
                    AND (e.details OPERATOR(pg_catalog.->>) 'workflow') = w.workflow))
  FROM idemgate.watched_workflows w;
END;
COMMENT ON FUNCTION idemgate.alert_watched_workflows() IS
'Part of idemgate.alert_instances: each watched workflow and when it was last seen';
REVOKE ALL ON FUNCTION idemgate.alert_watched_workflows() FROM PUBLIC;
