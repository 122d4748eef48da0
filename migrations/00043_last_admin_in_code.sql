-- +goose Up
-- The count of enabled admins in enabled_admins is moved by the write paths
-- of users (postgres/access, countAdmins) instead of trigger
-- users_keep_an_admin: on Citus, users is a reference table, and a trigger
-- on it runs on the nodes holding its copies, where it may not write
-- another distributed table.
DROP TRIGGER users_keep_an_admin ON users;
DROP FUNCTION users_keep_an_admin();

-- +goose Down
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
