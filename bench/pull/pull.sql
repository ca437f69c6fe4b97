-- idemgate pull API: claim_effects(type, 10), then complete_effect for each
-- effect after "sending" it (each call its own transaction).
SELECT array_agg(effect_id) AS ids, min(lease_owner::text) AS owner, count(*) AS n
  FROM idemgate.claim_effects('pull', 10) \gset
SELECT idemgate.complete_effect((:ids::uuid[])[1], :owner::uuid, 'p-1');
SELECT idemgate.complete_effect((:ids::uuid[])[2], :owner::uuid, 'p-2');
SELECT idemgate.complete_effect((:ids::uuid[])[3], :owner::uuid, 'p-3');
SELECT idemgate.complete_effect((:ids::uuid[])[4], :owner::uuid, 'p-4');
SELECT idemgate.complete_effect((:ids::uuid[])[5], :owner::uuid, 'p-5');
SELECT idemgate.complete_effect((:ids::uuid[])[6], :owner::uuid, 'p-6');
SELECT idemgate.complete_effect((:ids::uuid[])[7], :owner::uuid, 'p-7');
SELECT idemgate.complete_effect((:ids::uuid[])[8], :owner::uuid, 'p-8');
SELECT idemgate.complete_effect((:ids::uuid[])[9], :owner::uuid, 'p-9');
SELECT idemgate.complete_effect((:ids::uuid[])[10], :owner::uuid, 'p-10');
