-- +goose Up
-- A destination's kind (issue 43): how it is sent to, one of the kinds of
-- internal/sink (webhook, slack, nats), stored rather than implied by which
-- fields are filled in. Existing destinations take the kind their fields
-- implied: NATS with a nats_url, slack with format slack, a webhook
-- otherwise. The check is of the name's form only, so that a new kind
-- needs no migration; the kinds are the registry's (sink.Names). It is
-- named and added apart: Citus refuses a constraint added with its column.
ALTER TABLE destinations ADD COLUMN kind text;
UPDATE destinations SET kind = CASE WHEN nats_url IS NOT NULL THEN 'nats'
                                    WHEN format = 'slack' THEN 'slack'
                                    ELSE 'webhook' END;
ALTER TABLE destinations ALTER COLUMN kind SET NOT NULL;
ALTER TABLE destinations ADD CONSTRAINT destinations_kind_check CHECK (kind ~ '^[a-z][a-z0-9_]{0,31}$');

-- +goose Down
ALTER TABLE destinations DROP COLUMN kind;
