-- +goose Up
-- Built-in alerts (docs/alerts.md). alert_rules holds the settings an owner
-- changed (a rule without a row has its default, domain/alerting.Default).
CREATE TABLE alert_rules (
    tenant_id      bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    rule           text NOT NULL,
    enabled        boolean NOT NULL,
    threshold      bigint NOT NULL CHECK (threshold >= 1),
    window_seconds bigint NOT NULL CHECK (window_seconds BETWEEN 60 AND 2592000),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, rule)
);

-- An alert fires once when its rule's condition starts for a subject (a
-- provider, a destination, or '' for the tenant) and resolves once when it
-- ends: at most one firing alert per rule and subject.
CREATE TABLE alerts (
    tenant_id      bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id             bigint GENERATED ALWAYS AS IDENTITY,
    rule           text NOT NULL,
    provider       text NOT NULL DEFAULT '',
    subject        text NOT NULL DEFAULT '',
    summary        text NOT NULL,
    value          bigint NOT NULL,
    threshold      bigint NOT NULL,
    window_seconds bigint NOT NULL,
    started_at     timestamptz NOT NULL,
    resolved_at    timestamptz,
    resolved_value bigint,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX alerts_firing ON alerts (tenant_id, rule, subject) WHERE resolved_at IS NULL;
CREATE INDEX alerts_newest ON alerts (tenant_id, started_at DESC, id DESC);

-- Every firing and resolution in the order it happened: what destinations
-- subscribed to alert.* are sent, each after its destination's
-- alert_cursor.
CREATE TABLE alert_events (
    tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id        bigint GENERATED ALWAYS AS IDENTITY,
    alert_id  bigint NOT NULL,
    type      text NOT NULL CHECK (type IN ('alert.fired', 'alert.resolved')),
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, alert_id) REFERENCES alerts (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE alert_events;
DROP TABLE alerts;
DROP TABLE alert_rules;
