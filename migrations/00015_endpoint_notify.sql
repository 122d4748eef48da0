-- +goose Up
-- Every change to what a webhook endpoint is made of (its tenant, provider,
-- secrets and scopes) notifies channel tidemark_endpoints with the tenant's
-- id, so that every node drops that tenant's cached endpoints at once
-- (postgres/listen.go). PostgreSQL sends notifications at commit, and one
-- per distinct payload per transaction, so a statement touching many rows
-- of one tenant costs one notification.
-- +goose StatementBegin
CREATE FUNCTION tidemark_notify_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- tenants carry their id as id, the other tables as tenant_id.
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

-- +goose Down
DROP TRIGGER scopes_notify_endpoints ON scopes;
DROP TRIGGER provider_secrets_notify_endpoints ON provider_secrets;
DROP TRIGGER providers_notify_endpoints ON providers;
DROP TRIGGER tenants_notify_endpoints ON tenants;
DROP FUNCTION tidemark_notify_endpoints();
