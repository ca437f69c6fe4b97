-- pgmq-shaped queue in plain SQL: read 10 (FOR UPDATE SKIP LOCKED, visibility
-- timeout), then delete each message after "sending" it.
WITH cte AS (SELECT msg_id FROM q WHERE vt <= clock_timestamp() ORDER BY msg_id LIMIT 10 FOR UPDATE SKIP LOCKED),
upd AS (UPDATE q m SET vt = clock_timestamp() + interval '1 minute', read_ct = m.read_ct + 1
        FROM cte WHERE m.msg_id = cte.msg_id RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message)
SELECT array_agg(msg_id) AS ids, count(*) AS n FROM upd \gset
DELETE FROM q WHERE msg_id = (:ids::bigint[])[1];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[2];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[3];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[4];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[5];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[6];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[7];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[8];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[9];
DELETE FROM q WHERE msg_id = (:ids::bigint[])[10];
