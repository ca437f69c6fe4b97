-- sql/functions/distributed_alert_watched_workflows.sql

-- alert_watched_workflows on Citus: per watched workflow, the latest run
-- and the latest duplicate or recovery, each a maximum Citus takes on
-- every shard (the ends of runs_workflow_created_idx and
-- events_claim_workflow_idx) and then of those.
CREATE OR REPLACE FUNCTION idemgate.distributed_alert_watched_workflows()
RETURNS TABLE(workflow text, expected_interval interval, last_seen timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET citus.allow_nested_distributed_execution = on
AS $$
DECLARE
  w record;
  last_run timestamptz;
  last_claim timestamptz;
BEGIN
  FOR w IN SELECT ww.workflow, ww.expected_interval, ww.created_at
             FROM idemgate.watched_workflows ww ORDER BY ww.workflow LOOP
    SELECT pg_catalog.max(r.created_at) INTO last_run
      FROM idemgate.runs r WHERE r.workflow = w.workflow;
    SELECT pg_catalog.max(e.at) INTO last_claim
      FROM idemgate.events e
     WHERE e.kind IN ('recovered', 'duplicate') AND (e.details ->> 'workflow') = w.workflow;
    workflow := w.workflow;
    expected_interval := w.expected_interval;
    last_seen := GREATEST(w.created_at, last_run, last_claim);
    RETURN NEXT;
  END LOOP;
END
$$;
COMMENT ON FUNCTION idemgate.distributed_alert_watched_workflows() IS
'alert_watched_workflows on Citus, read on the coordinator';
REVOKE ALL ON FUNCTION idemgate.distributed_alert_watched_workflows() FROM PUBLIC;
