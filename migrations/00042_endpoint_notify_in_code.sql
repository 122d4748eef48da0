-- +goose Up
-- The endpoint-cache notifications of 00015 are sent by the write paths
-- themselves now (pg.NotifyEndpoints): Citus refuses to distribute tables
-- with triggers, and where it is told to allow them, a trigger runs on the
-- worker that holds the shard, so its NOTIFY reaches no listening node.
DROP TRIGGER scopes_notify_endpoints ON scopes;
DROP TRIGGER provider_secrets_notify_endpoints ON provider_secrets;
DROP TRIGGER providers_notify_endpoints ON providers;
DROP TRIGGER tenants_notify_endpoints ON tenants;
DROP FUNCTION tidemark_notify_endpoints();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION tidemark_notify_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('tidemark_endpoints', (to_jsonb(OLD) ->> TG_ARGV[0]));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('tidemark_endpoints', (to_jsonb(NEW) ->> TG_ARGV[0]));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER tenants_notify_endpoints AFTER INSERT OR UPDATE OR DELETE ON tenants
    FOR EACH ROW EXECUTE FUNCTION tidemark_notify_endpoints('id');
CREATE TRIGGER providers_notify_endpoints AFTER INSERT OR UPDATE OR DELETE ON providers
    FOR EACH ROW EXECUTE FUNCTION tidemark_notify_endpoints('tenant_id');
CREATE TRIGGER provider_secrets_notify_endpoints AFTER INSERT OR UPDATE OR DELETE ON provider_secrets
    FOR EACH ROW EXECUTE FUNCTION tidemark_notify_endpoints('tenant_id');
CREATE TRIGGER scopes_notify_endpoints AFTER INSERT OR UPDATE OR DELETE ON scopes
    FOR EACH ROW EXECUTE FUNCTION tidemark_notify_endpoints('tenant_id');
