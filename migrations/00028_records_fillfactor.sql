-- +goose Up
-- Every applied event rewrites its record's row. With full pages the new
-- version rarely fits beside the old one, so most updates were not HOT and
-- wrote a new primary-key entry too; space left free on each page lets
-- them stay on it. Applies to pages written from now on.
ALTER TABLE records SET (fillfactor = 80);

-- +goose Down
ALTER TABLE records RESET (fillfactor);
