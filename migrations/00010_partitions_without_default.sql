-- +goose Up
-- The event and delivery logs lose their DEFAULT partitions, so that routine
-- maintenance never makes ingest wait: PostgreSQL refuses
-- DETACH PARTITION ... CONCURRENTLY on a table that has a default partition,
-- and attaching a partition beside one takes ACCESS EXCLUSIVE on it. In its
-- place each log gets daily partitions from today through 30 days ahead and
-- a catch-all range partition, <log>_fromYYYYMMDD, for every instant after
-- the newest daily partition (postgres/cleanup.go keeps both up to date).
-- The rows the default partitions held move to the partition of their day,
-- created here when missing. This runs once, inside the migration.
-- +goose StatementBegin
DO $$
DECLARE
    log   text;
    today date := (now() AT TIME ZONE 'UTC')::date;
    after date;
    day   date;
    name  text;
BEGIN
    FOREACH log IN ARRAY ARRAY['deliveries', 'events'] LOOP
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', log, log || '_default');
        SELECT greatest(today + 31, max(to_date(right(c.relname, 8), 'YYYYMMDD')) + 1) INTO after
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = log::regclass AND c.relname ~ ('^' || log || '_p[0-9]{8}$');
        FOR day IN EXECUTE format(
            'SELECT d::date FROM generate_series(%L::date, %L::date - 1, interval ''1 day'') d
             UNION SELECT DISTINCT (received_at AT TIME ZONE ''UTC'')::date FROM %I WHERE received_at < %L',
            today, after, log || '_default', after::timestamp AT TIME ZONE 'UTC')
        LOOP
            name := log || '_p' || to_char(day, 'YYYYMMDD');
            IF to_regclass(quote_ident(name)) IS NULL THEN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', name, log,
                    day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
            END IF;
        END LOOP;
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (MAXVALUE)',
            log || '_from' || to_char(after, 'YYYYMMDD'), log, after::timestamp AT TIME ZONE 'UTC');
        EXECUTE format('INSERT INTO %I SELECT * FROM %I', log, log || '_default');
        EXECUTE format('DROP TABLE %I', log || '_default');
    END LOOP;
END $$;
-- +goose StatementEnd

-- The smallest scope TTL is 24 hours: providers retry for hours, and a key
-- forgotten sooner turns a retry into a new event. Shorter TTLs set before
-- this rule become 24 hours.
UPDATE scopes SET ttl_seconds = 86400, updated_at = now() WHERE ttl_seconds < 86400;
ALTER TABLE scopes DROP CONSTRAINT scopes_ttl_seconds_check,
    ADD CONSTRAINT scopes_ttl_seconds_check CHECK (ttl_seconds BETWEEN 86400 AND 7776000);

-- +goose Down
ALTER TABLE scopes DROP CONSTRAINT scopes_ttl_seconds_check,
    ADD CONSTRAINT scopes_ttl_seconds_check CHECK (ttl_seconds BETWEEN 60 AND 7776000);

-- +goose StatementBegin
DO $$
DECLARE
    log  text;
    rest text;
BEGIN
    FOREACH log IN ARRAY ARRAY['deliveries', 'events'] LOOP
        SELECT c.relname INTO rest FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = log::regclass AND c.relname ~ ('^' || log || '_from[0-9]{8}$');
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', log, rest);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', log || '_default', log);
        EXECUTE format('INSERT INTO %I SELECT * FROM %I', log, rest);
        EXECUTE format('DROP TABLE %I', rest);
    END LOOP;
END $$;
-- +goose StatementEnd
