-- claimSQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
INSERT INTO idempotency_keys AS k (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, claimed_at, expires_at)
SELECT e.tenant_id, e.key, e.provider_id, e.identifier, sha256(convert_to(e.object_id || chr(31) || coalesce(e.revision::text, '') || chr(31) || coalesce(e.snapshot::text, ''), 'UTF8')), e.delivery_id, e.seq,
       statement_timestamp(), statement_timestamp() + make_interval(secs => e.ttl)
FROM unnest(@tenant_id::bigint[], @key::bytea[], @provider_id::bigint[], @identifier::text[], @object_id::text[],
    @revision::bigint[], @snapshot::jsonb[], @delivery_id::uuid[], @seq::int[], @ttl::float8[],
    @revision_at::timestamptz[], @max_skew::float8[])
  WITH ORDINALITY AS e (tenant_id, key, provider_id, identifier, object_id, revision, snapshot, delivery_id, seq, ttl,
    revision_at, max_skew, i)
WHERE e.key IS NOT NULL AND NOT coalesce(e.revision_at > now() + make_interval(secs => e.max_skew), false)
ORDER BY e.tenant_id, e.key
ON CONFLICT (tenant_id, key) DO UPDATE SET
    identifier = EXCLUDED.identifier, content_hash = EXCLUDED.content_hash, delivery_id = EXCLUDED.delivery_id,
    seq = EXCLUDED.seq, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= EXCLUDED.claimed_at
