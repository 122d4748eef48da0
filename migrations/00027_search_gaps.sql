-- +goose Up
-- IndexSearch (postgres/search.go) reads a range of a feed's ids once, and
-- then again only the ids that were missing from it: gaps holds the ids up
-- to scanned_id that no committed row had when they were read (drawn by a
-- transaction still running, or by one that rolled back). Before, every
-- range was read a second time, which cost about a third of indexing the
-- records. The range read once but not yet again becomes one gap.
ALTER TABLE search_progress ADD COLUMN gaps int8multirange NOT NULL DEFAULT '{}';
UPDATE search_progress SET gaps = int8multirange(int8range(safe_id, scanned_id, '(]')) WHERE scanned_id > safe_id;
ALTER TABLE search_progress DROP COLUMN safe_id;

-- +goose Down
ALTER TABLE search_progress ADD COLUMN safe_id bigint NOT NULL DEFAULT 0;
UPDATE search_progress SET safe_id = CASE WHEN isempty(gaps) THEN scanned_id ELSE lower(gaps) - 1 END;
ALTER TABLE search_progress DROP COLUMN gaps;
