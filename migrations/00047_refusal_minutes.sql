-- +goose Up
-- Refused deliveries (401, 413, 400, 429) counted exactly per provider and
-- minute, so that the refusals alert counts every refusal of its window,
-- the shortest (1 minute) included: the hourly counters in
-- outcome_counters count only whole hours, and the log keeps at most one
-- refused delivery per provider and second. Written with those counters
-- by each node's refusal flusher (postgres/ingest's LogRefusals); the
-- cleanup pass deletes the minutes older than the longest window a rule
-- may have. No shard column: one flusher per node writes a minute's row a
-- few times, where the counters take every ingest transaction's update.
-- The foreign key is to tenants, as overload_refusals' (00045): a
-- provider goes only with its tenant, and the flusher's join drops counts
-- of a provider deleted meanwhile.
CREATE TABLE refusal_minutes (
    tenant_id   bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    minute      timestamptz NOT NULL,
    provider_id bigint NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (tenant_id, minute, provider_id)
);
-- The cleanup pass deletes by minute across tenants.
CREATE INDEX refusal_minutes_expiry ON refusal_minutes (minute);

-- The refusals of the last 30 days and an hour, counted before this
-- migration per hour only, are put in the last minute of their hour (the
-- current hour's in the current minute): every window that holds one of
-- them counts it, and none counts fewer than were refused.
INSERT INTO refusal_minutes (tenant_id, minute, provider_id, n)
SELECT c.tenant_id, least(c.bucket + interval '59 minutes', date_trunc('minute', now(), 'UTC')), c.provider_id, sum(c.n)
FROM outcome_counters c
JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.outcome = 'delivery_rejected' AND c.bucket > now() - interval '30 days 1 hour'
GROUP BY 1, 2, 3;

-- +goose Down
DROP TABLE refusal_minutes;
