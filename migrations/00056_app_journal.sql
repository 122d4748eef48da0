-- +goose Up
-- The journal (issue 44): a node reads each installed portal's change
-- journal (HubSpot's Webhooks Journal) and writes each page as a delivery
-- whose source is 'journal'. On Citus, the new table's key to tenants (a
-- reference table) must not follow a parallel change of the distributed
-- deliveries in one transaction: the changes go one shard at a time.
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_source;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_source CHECK (source IN ('backfill', 'journal'));

-- Where each install's journal was read to. The offset moves in the
-- transaction of the page's delivery, compare-and-set on the offset read,
-- so that a crash neither skips nor repeats a page. leased_by and
-- lease_until keep two nodes from reading one install's journal at once.
-- Tenant-owned, distributed by tenant_id on Citus; no foreign key to the
-- reference table app_installs: a cursor left by a deleted install is
-- never read (installs get new ids).
CREATE TABLE app_journal_cursors (
    tenant_id      bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    install_id     bigint NOT NULL,
    journal_offset text,
    moved_at       timestamptz,
    entries_read   bigint NOT NULL DEFAULT 0,
    found_missed   bigint NOT NULL DEFAULT 0,
    expirations    bigint NOT NULL DEFAULT 0,
    expired_at     timestamptz,
    leased_by      text,
    lease_until    timestamptz,
    PRIMARY KEY (tenant_id, install_id)
);

-- +goose Down
DROP TABLE app_journal_cursors;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_source;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_source CHECK (source IN ('backfill'));
