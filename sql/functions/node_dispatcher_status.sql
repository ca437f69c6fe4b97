-- sql/functions/node_dispatcher_status.sql

-- node_dispatcher_status: this node's dispatchers
-- (docs/citus.md). node_dispatcher_status() is dispatcher_status() of one
-- node, with the node's name on Citus: what the alert views read (whether
-- a dispatcher serves this database here) and what the coordinator asks
-- each worker for. 55_dispatcher_status.sql then gives dispatcher_status()
-- its node column, once 50_unsettled_runs.sql has moved the alert views
-- over to this function.
CREATE OR REPLACE FUNCTION idemgate.node_dispatcher_status()
RETURNS TABLE(slot integer, pid integer, started_at timestamptz, in_flight integer,
                         rounds bigint, claimed bigint, completed bigint, failed bigint,
                         released bigint, last_round_at timestamptz, database text, node text)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'idemgate_dispatcher_status';
COMMENT ON FUNCTION idemgate.node_dispatcher_status() IS
'This node''s running dispatchers (dispatcher_status() of one node); node is host:port on Citus, NULL on a single node';
REVOKE ALL ON FUNCTION idemgate.node_dispatcher_status() FROM PUBLIC;
