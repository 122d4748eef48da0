-- genericPlansSQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
SELECT set_config('plan_cache_mode',
                  CASE WHEN to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN 'force_generic_plan' ELSE 'auto' END, true),
       set_config('jit', 'off', true),
       set_config('lock_timeout', coalesce(@lock_timeout::text, current_setting('lock_timeout')), true),
       set_config('statement_timeout', coalesce(@statement_timeout::text, current_setting('statement_timeout')), true)
