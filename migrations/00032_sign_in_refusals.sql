-- +goose Up
-- Refused sign-ins that check no real account's password (unknown
-- accounts, throttled attempts) are counted here per client address key
-- and 15-minute window instead of each writing a row of the append-only
-- audit log: the first of each address, window and outcome is also
-- audited (postgres/access/signin.go). Rows older than 30 days are tidied
-- by sign-ins.
CREATE TABLE sign_in_refusals (
    address_key  text        NOT NULL,
    window_start timestamptz NOT NULL,
    outcome      text        NOT NULL,
    attempts     bigint      NOT NULL,
    last_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (address_key, window_start, outcome)
);
CREATE INDEX sign_in_refusals_window ON sign_in_refusals (window_start);

-- +goose Down
DROP TABLE sign_in_refusals;
