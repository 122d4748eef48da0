-- genericPlansSQL, whole, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)
