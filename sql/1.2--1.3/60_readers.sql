-- sql/1.2--1.3/60_readers.sql — readers see what happened, not the data
-- (docs/operations.md, "Who sees what"). The reader bundle reads no
-- payload, result, card, provider response body, header value, or error
-- text naming a host or port:
--   - dead letters without their payload and error (column privileges,
--     and the view dead_letter_summary; operators keep the table);
--   - events no longer carry the dead letter's error text, and the
--     payload hashes they and key_history show are keyed:
--     HMAC-SHA-256(secret, payload hash) with a secret made here that only
--     the extension owner reads (src/ledger/payload_hmac.c).

-- The secret: 64 random bytes K (from two v4 UUIDs' pg_strong_random bits,
-- through SHA-256), kept as HMAC's two pads K xor 0x36 and K xor 0x5c so
-- that SQL computes HMAC-SHA-256 as sha256(opad || sha256(ipad || m)).
-- Made on first use (payload_hmac), not by the script, so that a restore
-- (CREATE EXTENSION, then the dumped rows) keeps the dumped secret and the
-- keyed hashes already written stay comparable.
\ir ../tables/installation_secret.sql

-- payload_hmac(hash): the extension owner's only (the library calls it;
-- a caller who could pass any hash could confirm a guessed payload).
-- NULL in a read-only transaction before the secret exists (a standby).
\ir ../functions/payload_hmac.sql

-- run_payload_hmac(key): the keyed hash of a stored run's payload, for
-- key_history. It hashes only what is stored, never a caller's guess.
\ir ../functions/run_payload_hmac.sql
INSERT INTO idemgate.bundle_members (bundle, fn) VALUES
    ('reader', 'idemgate.run_payload_hmac(text)'),
    ('operator', 'idemgate.run_payload_hmac(text)');

-- key_history: the claim's input as its keyed hash; the rest is 1.2's
-- definition. On a distributed install the view reads an owner-only copy
-- (distributed_wrap_view): the copy is redefined.
DO $$
DECLARE
  def text := $def$
    SELECT r.idempotency_key, r.created_at AS at, 'claimed'::text AS kind, NULL::text AS actor,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'workflow', r.workflow, 'replaces_key', r.replaces_key, 'origin', r.origin,
               'payload_hmac', idemgate.run_payload_hmac(r.idempotency_key))) AS details,
           NULL::uuid AS effect_id
      FROM idemgate.runs r
    UNION ALL
    SELECT e.idempotency_key, e.at, e.kind, e.actor, e.details, e.effect_id
      FROM idemgate.events e
     WHERE e.idempotency_key IS NOT NULL
    UNION ALL
    SELECT o.idempotency_key, o.updated_at, 'effect_completed', NULL,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'provider_id', o.provider_id, 'status', o.last_status, 'attempt', o.attempts)),
           o.effect_id
      FROM idemgate.outbox o
     WHERE o.state OPERATOR(pg_catalog.=) 'completed'
    UNION ALL
    -- A run with effects completes only when its last effect is settled.
    SELECT r.idempotency_key, r.updated_at, 'state_changed', NULL,
           pg_catalog.jsonb_build_object('from', 'approved', 'to', 'completed', 'version', r.version),
           NULL
      FROM idemgate.runs r
     WHERE r.state OPERATOR(pg_catalog.=) 'completed'
       AND EXISTS (SELECT 1 FROM idemgate.outbox o
                    WHERE o.idempotency_key OPERATOR(pg_catalog.=) r.idempotency_key)
  $def$;
BEGIN
  IF pg_catalog.to_regclass('idemgate.distributed_key_history') IS NOT NULL THEN
    EXECUTE 'CREATE OR REPLACE VIEW idemgate.distributed_key_history AS ' || def;
  ELSE
    EXECUTE 'CREATE OR REPLACE VIEW idemgate.key_history AS ' || def;
  END IF;
END $$;

-- Dead letters for readers: what failed, where and when, without the
-- input or the error text. A bundle's relation may now name the columns
-- it reads (grant_role grants SELECT on those columns only): the reader
-- reads every column of dead_letters but payload and error, and
-- dead_letter_summary is those columns as a view (SELECT * works there;
-- on the table it needs the columns named). Operators keep the table.
ALTER TABLE idemgate.bundle_members ADD COLUMN columns text[];
COMMENT ON COLUMN idemgate.bundle_members.columns IS
'For a relation: the columns the bundle reads (NULL: all of them)';
UPDATE idemgate.bundle_members
   SET columns = '{id,kind,idempotency_key,effect_id,effect_type,target,error_class,attempts,dead_at,reinjected_at,reinjected_by}'
 WHERE bundle OPERATOR(pg_catalog.=) 'reader' AND rel OPERATOR(pg_catalog.=) 'idemgate.dead_letters'::pg_catalog.regclass;
\ir ../views/dead_letter_summary.sql
INSERT INTO idemgate.bundle_members (bundle, rel) VALUES
    ('reader', 'idemgate.dead_letter_summary'),
    ('operator', 'idemgate.dead_letter_summary');
-- Endpoint health (38_endpoint_circuits.sql) for readers: every column
-- but the URL.
INSERT INTO idemgate.bundle_members (bundle, rel, columns) VALUES
    ('reader', 'idemgate.endpoint_health',
     '{effect_type,state,opened_at,failures,error_class,last_status,probes,next_probe_at,waiting,waiting_since}');
-- Roles that hold reader (and not operator) lose the whole table; they get
-- its columns back from 99_release_grants.sql.
DO $$
DECLARE g record;
BEGIN
  FOR g IN SELECT DISTINCT gb.role::pg_catalog.text AS role
             FROM idemgate.granted_bundles gb
             JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) gb.role::pg_catalog.oid
            WHERE gb.bundle OPERATOR(pg_catalog.=) 'reader'
              AND NOT EXISTS (SELECT 1 FROM idemgate.granted_bundles o
                               WHERE o.role OPERATOR(pg_catalog.=) gb.role
                                 AND o.bundle OPERATOR(pg_catalog.=) 'operator')
  LOOP
    EXECUTE pg_catalog.format('REVOKE SELECT ON idemgate.dead_letters FROM %s', g.role);
  END LOOP;
END $$;

-- Events written before the update lose what readers may not see.
UPDATE idemgate.events SET details = details OPERATOR(pg_catalog.-) 'error'
 WHERE kind OPERATOR(pg_catalog.=) 'dead_lettered' AND details OPERATOR(pg_catalog.?) 'error';
UPDATE idemgate.events
   SET details = (details OPERATOR(pg_catalog.-) 'payload_hash')
                 OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('payload_hmac',
                     idemgate.payload_hmac(pg_catalog.decode(details OPERATOR(pg_catalog.->>) 'payload_hash', 'hex')))
 WHERE kind OPERATOR(pg_catalog.=) 'recovered' AND details OPERATOR(pg_catalog.?) 'payload_hash';
