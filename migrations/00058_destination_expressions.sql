-- +goose Up
-- A destination's filter and transform (issue 45): CEL expressions checked
-- by internal/shape before they are stored, at most 4 KiB each; filtered
-- counts the changes and alert events its filter passed over. The checks
-- are named and added apart: Citus refuses a constraint added with its
-- column.
ALTER TABLE destinations ADD COLUMN filter text;
ALTER TABLE destinations ADD COLUMN transform text;
ALTER TABLE destinations ADD COLUMN filtered bigint NOT NULL DEFAULT 0;
ALTER TABLE destinations ADD CONSTRAINT destinations_filter_check CHECK (octet_length(filter) BETWEEN 1 AND 4096);
ALTER TABLE destinations ADD CONSTRAINT destinations_transform_check CHECK (octet_length(transform) BETWEEN 1 AND 4096);

-- +goose Down
ALTER TABLE destinations DROP COLUMN filtered;
ALTER TABLE destinations DROP COLUMN transform;
ALTER TABLE destinations DROP COLUMN filter;
