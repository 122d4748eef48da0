-- +goose Up
-- Operator console: sessions (the schema scs's pgxstore expects) and failed
-- sign-ins for throttling.

CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

CREATE TABLE login_failures (
    email     text NOT NULL,
    address   text NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_email ON login_failures (email, failed_at);
CREATE INDEX login_failures_address ON login_failures (address, failed_at);

-- +goose Down
DROP TABLE login_failures, sessions;
