-- deliveriesSQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address, replay_of, source, answered_at)
SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
       d.method, d.path, d.query, d.headers, d.truncated, d.client_address, d.replay_of, d.source, clock_timestamp()
FROM unnest(@d_tenants::bigint[], @d_ids::uuid[], @d_times::timestamptz[], @d_providers::bigint[],
        @d_statuses::smallint[], @d_signatures::text[], @d_reasons::text[], @d_event_counts::int[], @d_bodies::bytea[],
        @d_methods::text[], @d_paths::text[], @d_queries::text[], @d_headers::jsonb[], @d_truncated::boolean[],
        @d_clients::text[], @d_replay_of::uuid[], @d_sources::text[])
    AS d (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
          method, path, query, headers, truncated, client_address, replay_of, source)
