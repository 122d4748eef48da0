-- +goose Up
-- A replay job's worker re-checks, for every slice, that the actor who
-- started the job still may (internal/replay/worker.go): it needs the
-- actor's identity, the API token's id or the operator's id, as names are
-- not unique (tokens) or can change hands. Null for the CLI and for jobs
-- older than this column, which are checked by name.
ALTER TABLE replay_jobs ADD COLUMN actor_id bigint;

-- +goose Down
ALTER TABLE replay_jobs DROP COLUMN actor_id;
