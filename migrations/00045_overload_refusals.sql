-- +goose Up
-- Deliveries answered 503 for overload (domain.OverloadReasons), counted per
-- tenant, hour and reason, so that the overview shows the last 24 hours'
-- per reason on every node. Written in batches by each node's refusal
-- flusher; the cleanup pass deletes what is older than the retention.
CREATE TABLE overload_refusals (
    tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    reason    text NOT NULL,
    n         bigint NOT NULL,
    PRIMARY KEY (tenant_id, hour, reason)
);

-- +goose Down
DROP TABLE overload_refusals;
