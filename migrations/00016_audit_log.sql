-- +goose Up
-- The audit log: one row per change made by a person or a token, written in
-- the transaction of the change (postgres/audit.go). tenant_id 0 marks a
-- change outside any tenant (operators, sign-ins); there is no foreign key,
-- so that the record of a change outlives what it changed.
CREATE TABLE audit_log (
    tenant_id      bigint      NOT NULL,
    id             bigint      GENERATED ALWAYS AS IDENTITY,
    at             timestamptz NOT NULL DEFAULT now(),
    actor_kind     text        NOT NULL CHECK (actor_kind IN ('operator', 'token', 'cli')),
    actor          text        NOT NULL,
    action         text        NOT NULL,
    target         text        NOT NULL DEFAULT '',
    summary        text        NOT NULL DEFAULT '',
    client_address text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_tenant_at ON audit_log (tenant_id, at DESC, id DESC);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);

-- Append-only: no update ever, and a delete only of entries older than the
-- retention (400 days), whatever code path or console asks.
-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.at < now() - interval '400 days' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
