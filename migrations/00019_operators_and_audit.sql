-- +goose Up
-- Operator lifecycle. A disabled operator cannot sign in. session_epoch is
-- stored in a session at sign-in and compared on every console request
-- (web/console.go): raising it ends every session signed in before, at
-- once (disable, password reset, sign out everywhere).
ALTER TABLE users
    ADD COLUMN disabled_at   timestamptz,
    ADD COLUMN session_epoch bigint NOT NULL DEFAULT 0;

-- At least one enabled admin always remains, whatever statement, process
-- or isolation level tries otherwise. Every change to the number of
-- enabled admins moves this one counter row: concurrent changes queue on
-- its row lock and each sees the count the one before left (or, under
-- REPEATABLE READ, fails to serialize), and a change that would leave none
-- fails. A database that never had an admin may keep having none.
CREATE TABLE enabled_admins (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n         integer NOT NULL
);
INSERT INTO enabled_admins (n) SELECT count(*) FROM users WHERE is_admin AND disabled_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION users_keep_an_admin() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta     integer := 0;
    remaining integer;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.is_admin AND OLD.disabled_at IS NULL THEN
        delta := delta - 1;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.is_admin AND NEW.disabled_at IS NULL THEN
        delta := delta + 1;
    END IF;
    IF delta <> 0 THEN
        UPDATE enabled_admins SET n = n + delta RETURNING n INTO remaining;
        IF delta < 0 AND remaining < 1 THEN
            RAISE EXCEPTION 'at least one enabled admin must remain'
                USING ERRCODE = 'check_violation', CONSTRAINT = 'users_keep_an_admin';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER users_keep_an_admin AFTER INSERT OR UPDATE OF is_admin, disabled_at OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_keep_an_admin();

-- TRUNCATE skips the row triggers that keep the audit log append-only
-- (migration 00016); refuse it too.
-- +goose StatementBegin
CREATE FUNCTION audit_log_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_no_truncate();

-- The audit page's action filter: its choices (a skip scan over action)
-- and its pages, within a tenant and across tenants.
CREATE INDEX audit_log_tenant_action ON audit_log (tenant_id, action, at DESC, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, at DESC, id DESC);

-- +goose Down
DROP TRIGGER audit_log_no_truncate ON audit_log;
DROP FUNCTION audit_log_no_truncate();
DROP INDEX audit_log_action;
DROP INDEX audit_log_tenant_action;
DROP TRIGGER users_keep_an_admin ON users;
DROP FUNCTION users_keep_an_admin();
DROP TABLE enabled_admins;
ALTER TABLE users DROP COLUMN session_epoch, DROP COLUMN disabled_at;
