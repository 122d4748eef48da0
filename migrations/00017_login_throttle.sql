-- +goose Up
-- Sign-in throttling (postgres/access.go): the times of recent password
-- checks, one row per account (email) and client address key (an IPv4
-- address or an IPv6 /64), and one row per address key with email '' for
-- all accounts together. A sign-in takes its slot with a guarded upsert
-- before it compares the password and holds the row until it commits, so
-- concurrent attempts cannot all pass a limit read before any was counted.
-- It replaces login_failures, which was read before the check and written
-- after it.
CREATE TABLE login_throttle (
    email       text          NOT NULL,
    address_key text          NOT NULL,
    checks      timestamptz[] NOT NULL,
    last_at     timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (email, address_key)
);
CREATE INDEX login_throttle_last_at ON login_throttle (last_at);
DROP TABLE login_failures;

-- +goose Down
CREATE TABLE login_failures (
    email     text NOT NULL,
    address   text NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_email ON login_failures (email, failed_at);
CREATE INDEX login_failures_address ON login_failures (address, failed_at);
DROP TABLE login_throttle;
