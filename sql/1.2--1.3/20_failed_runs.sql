-- sql/1.2--1.3/20_failed_runs.sql — a run whose effect failed for good
-- ends (docs/outbox.md, "Completing a run"). When every effect of an
-- approved run is settled and at least one failed, the run moves to
-- failed_terminal in the same transaction (src/ledger/run_completion.c,
-- CompleteLockedRuns), and terminal_failure fires at once naming its
-- workflow and key; reinjecting the effect's dead letter brings it back to
-- approved. Runs that 1.2 left approved for ever with a failed effect are
-- moved here, each with its state_changed event, so they are alerted and
-- later purged like any finished run.
WITH stranded AS (
    UPDATE idemgate.runs r
       SET state = 'failed_terminal', version = r.version OPERATOR(pg_catalog.+) 1,
           updated_at = pg_catalog.now()
     WHERE r.state OPERATOR(pg_catalog.=) 'approved'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key
                      AND o.state OPERATOR(pg_catalog.=) 'failed')
       AND NOT EXISTS (SELECT 1 FROM idemgate.outbox o
                        WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key
                          AND o.state OPERATOR(pg_catalog.<>) ALL ('{completed,cancelled,failed}'::pg_catalog.text[]))
    RETURNING r.idempotency_key, r.version, r.workflow
)
INSERT INTO idemgate.events (idempotency_key, kind, actor, details)
SELECT s.idempotency_key, 'state_changed', 'ALTER EXTENSION idemgate UPDATE',
       pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
         'from', 'approved', 'to', 'failed_terminal', 'version', s.version,
         'workflow', s.workflow, 'reason', 'an effect failed for good',
         'failed_effects', (SELECT pg_catalog.jsonb_agg(o.effect_id ORDER BY o.created_at, o.effect_id)
                              FROM idemgate.outbox o
                             WHERE o.idempotency_key OPERATOR(pg_catalog.=) s.idempotency_key
                               AND o.state OPERATOR(pg_catalog.=) 'failed')))
  FROM stranded s;

-- unsettled_runs: a run approved with every effect settled, one of them
-- failed, is as stranded as one whose effects all completed (it should
-- have ended failed_terminal with its last effect).
\ir ../functions/alert_unsettled_runs.sql

-- Its distributed version (sql/functions/distributed_alert_unsettled_runs.sql) the
-- same way, and on one node it answers as the plain one (1.2 failed with
-- 42703 there: no bucket column).
\ir ../functions/distributed_alert_unsettled_runs.sql
