CREATE EXTENSION IF NOT EXISTS idemgate;
SELECT * FROM idemgate.metrics();
SELECT idemgate.prometheus();
SELECT * FROM idemgate.alerts;
SELECT idemgate.publish_alerts();
SELECT idemgate.purge('1 hour');
SELECT idemgate.watch_workflow('x', '1 minute');
EXPLAIN (costs off) SELECT * FROM idemgate.alerts;
