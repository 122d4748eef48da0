-- leadLockSQL, whole, as Citus is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
SELECT pg_advisory_xact_lock(@key)
