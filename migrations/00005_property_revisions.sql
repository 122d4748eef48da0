-- +goose Up
-- Per-property revisions (HubSpot propertyChange): each property of a record
-- remembers the revision that last set it, so a late older change of one
-- property never overwrites a newer one while other properties still move
-- on. deleted_revision marks a deletion; changes older than it are stale.
ALTER TABLE records ADD COLUMN property_revisions jsonb NOT NULL DEFAULT '{}';
ALTER TABLE records ADD COLUMN deleted_revision bigint;
ALTER TABLE accepted_revisions ADD COLUMN property text;
ALTER TABLE events ADD COLUMN property text;

-- +goose Down
ALTER TABLE events DROP COLUMN property;
ALTER TABLE accepted_revisions DROP COLUMN property;
ALTER TABLE records DROP COLUMN deleted_revision, DROP COLUMN property_revisions;
